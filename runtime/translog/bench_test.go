package translog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/translog"
	"github.com/assayhq/assay/storage"
)

// BenchmarkLog_Court runs the court's whole cases (create, fund, deliver,
// then accept or dispute) from 32 goroutines on a durable badger store,
// with the transparency log off and on (its integrator running at its
// default interval beside the cases): what the log costs the court. Run
// with -cpu 2 -count N and compare the pairs; cpu-µs/case (the process's
// CPU a case, the store's and the integrator's goroutines included) reads
// steadier than cases/s on a shared machine.
func BenchmarkLog_Court(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("log=%v", on), func(b *testing.B) { benchCourt(b, on) })
	}
}

func benchCourt(b *testing.B, logged bool) {
	db, err := storage.Open(b.TempDir(), storage.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: b.TempDir(), Now: time.Now, Rand: rand.NewChaCha8([32]byte{7})})
	if err != nil {
		b.Fatal(err)
	}
	c, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys})
	if err != nil {
		b.Fatal(err)
	}
	var waited atomic.Int64
	var included atomic.Int64
	stop := func() {}
	if logged {
		keys.LogReceipts()
		lkey, err := receipt.OpenLogKey(receipt.LogKeyConfig{Dir: b.TempDir(), Rand: rand.NewChaCha8([32]byte{8})})
		if err != nil {
			b.Fatal(err)
		}
		l, err := translog.New(translog.Config{Store: db, Key: lkey, Included: func(d time.Duration) {
			waited.Add(int64(d))
			included.Add(1)
		}})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = l.Run(ctx) })
		stop = func() { cancel(); wg.Wait() }
	}
	defer stop()
	ctx := context.Background()
	anon := principal.Actor{}
	var n, clients atomic.Int64
	b.SetParallelism(16) // 32 goroutines at -cpu 2
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		buyer := fmt.Sprintf("did:bench:buyer%d", clients.Add(1))
		for pb.Next() {
			i := n.Add(1)
			r, err := c.Create(ctx, escrow.CreateRequest{Buyer: buyer, Seller: fmt.Sprintf("did:bench:seller%d", i%64), Price: json.RawMessage("10"),
				Acceptance: json.RawMessage(`{"assertions":[{"path":"rows","op":"gte","value":100}]}`)}, idem.Request{})
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
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/case")
	if k := included.Load(); k > 0 {
		b.ReportMetric(float64(waited.Load())/float64(k)/1e6, "inclusion-ms")
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
