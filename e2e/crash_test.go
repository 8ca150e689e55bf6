package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

// rank orders a contract's states: a state that was acknowledged must be
// found again, or one after it.
func rank(status string) int {
	switch status {
	case "created":
		return 0
	case "funded":
		return 1
	case "delivered":
		return 2
	default: // accepted, disputed, escalated, resolved: decided
		return 3
	}
}

// ack is what the server acknowledged for one contract.
type ack struct {
	status  string
	receipt string // the receipt id of an acknowledged accept or dispute
}

// TestCrash drives cases from concurrent clients, kills the server with
// SIGKILL in the middle of the load, restarts it on the same data, and
// checks that every acknowledged contract and state change is there, every
// acknowledged receipt can be fetched, and the ledger sums to zero.
func TestCrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir)
	client := &http.Client{Timeout: 10 * time.Second}
	post := func(path, body string) (map[string]any, bool) {
		resp, err := client.Post(s.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			return nil, false // the server is gone: nothing acknowledged
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			return nil, false
		}
		var out map[string]any
		if json.Unmarshal(data, &out) != nil {
			return nil, false
		}
		return out, true
	}

	var (
		mu     sync.Mutex
		acks   = map[string]ack{}
		done   atomic.Int64
		stop   atomic.Bool
		wg     sync.WaitGroup
		record = func(id string, a ack) { mu.Lock(); acks[id] = a; mu.Unlock() }
	)
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				created, ok := post("/contracts", fmt.Sprintf(
					`{"buyer":"did:crash:b%d","seller":"did:crash:s%d","price":%d,"acceptance":{"assertions":[{"path":"rows","op":"gte","value":3}]}}`,
					c, i%7, 10+i))
				if !ok {
					continue
				}
				id, _ := created["contract_id"].(string)
				record(id, ack{status: "created"})
				if _, ok := post("/contracts/"+id+"/fund", `{}`); !ok {
					continue
				}
				record(id, ack{status: "funded"})
				if _, ok := post("/contracts/"+id+"/deliver", fmt.Sprintf(`{"deliverable":{"rows":%d},"evidence":{}}`, i%5)); !ok {
					continue
				}
				record(id, ack{status: "delivered"})
				action := "/accept"
				if i%2 == 1 {
					action = "/dispute"
				}
				body := `{}` // accept takes no fields
				if action == "/dispute" {
					body = `{"reason":"crash test"}`
				}
				receipt, ok := post("/contracts/"+id+action, body)
				if !ok {
					continue
				}
				rid, _ := receipt["id"].(string)
				record(id, ack{status: "decided", receipt: rid})
				done.Add(1)
			}
		}()
	}
	// Kill once the load is well under way.
	deadline := time.Now().Add(20 * time.Second)
	for done.Load() < 100 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polls the count of decided cases
	}
	if err := s.cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	<-s.exited
	stop.Store(true)
	wg.Wait()
	if done.Load() == 0 {
		t.Fatalf("no case was decided before the kill\n%s", s.log())
	}
	t.Logf("killed after %d decided cases, %d contracts acknowledged", done.Load(), len(acks))

	s2 := start(t, dir)
	missing := 0
	for id, a := range acks {
		r := s2.get(t, "/contracts/"+id)
		if r.status != http.StatusOK {
			t.Errorf("contract %s (acknowledged %s) is gone after the crash: %d", id, a.status, r.status)
			missing++
			continue
		}
		got, _ := r.obj(t)["status"].(string)
		if rank(got) < rank(a.status) {
			t.Errorf("contract %s: acknowledged %s, found %s after the crash", id, a.status, got)
		}
		if a.receipt != "" {
			rid := strings.TrimPrefix(a.receipt, "urn:assay:receipt:")
			if rr := s2.get(t, "/receipts/"+rid); rr.status != http.StatusOK {
				t.Errorf("receipt %s of contract %s is gone after the crash: %d", a.receipt, id, rr.status)
			}
		}
		if missing > 10 {
			t.Fatal("too many missing contracts")
		}
	}
	s2.stop(t)

	db, err := storage.Open(filepath.Join(dir, "db"), storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ledgerAtZero(t, db, done.Load())
}

// ledgerAtZero checks, in db itself, that the ledger sums to zero in every
// currency and is not empty after decided cases.
func ledgerAtZero(t *testing.T, db store.Store, decided int64) {
	t.Helper()
	err := db.View(context.Background(), func(tx store.Tx) error {
		sums, err := ledger.Sums(tx)
		for cur, sum := range sums {
			if sum != 0 {
				t.Errorf("ledger sums to %d %s, want 0", sum, cur)
			}
		}
		if len(sums) == 0 {
			t.Errorf("the ledger is empty after %d decided cases", decided)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
