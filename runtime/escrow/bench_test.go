package escrow_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/storage"
)

var benchInMemory = flag.Bool("inmemory", false, "benchmark on an in-memory store (no fsync)")

// BenchmarkService_Case runs whole cases (create, fund, deliver, then accept
// or dispute) from many goroutines on a durable store with signed receipts.
// Run with -cpu 2 to compare with DESIGN.md's 4,000 cases/s on two cores.
func BenchmarkService_Case(b *testing.B) {
	db, err := storage.Open(b.TempDir(), storage.Options{InMemory: *benchInMemory})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	c := mustCourtOn(b, db, b.TempDir())
	ctx := context.Background()
	var n, clients atomic.Int64
	b.SetParallelism(128)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		// A buyer of its own, as each client of assay bench court has:
		// one buyer for all would make every dispute rewrite the same
		// reputation counters, and retry on the conflicts.
		buyer := fmt.Sprintf("did:bench:buyer%d", clients.Add(1))
		for pb.Next() {
			i := n.Add(1)
			seller := fmt.Sprintf("did:bench:seller%d", i%64)
			r, err := c.Create(ctx, createReq(buyer, seller, "10", rows100), idem.Request{})
			if err != nil {
				b.Fatal(err)
			}
			var created escrow.Created
			_ = json.Unmarshal(r.Body, &created)
			id := created.ContractID
			if _, err := c.Fund(ctx, anon, id, idem.Request{}); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Deliver(ctx, anon, id, escrow.DeliverRequest{Deliverable: json.RawMessage(`{"rows":150}`)}, idem.Request{}); err != nil {
				b.Fatal(err)
			}
			if i%2 == 0 {
				_, err = c.Accept(ctx, anon, id, idem.Request{})
			} else {
				_, err = c.Dispute(ctx, anon, id, escrow.DisputeRequest{Reason: "check"}, idem.Request{})
			}
			if err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cases/s")
	// The process's CPU time per case (the store's own goroutines and the
	// collector included) reads steadier than the wall clock on a machine
	// that other work shares.
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/case")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
