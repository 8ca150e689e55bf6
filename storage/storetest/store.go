// Package storetest holds the contract suites that every implementation of
// runtime/store's interfaces passes: RunStoreSuite for store.Store (badger
// in package storage, PostgreSQL in storage/postgres) and RunQueueSuite for
// store.Queue. Each implementation's tests call the suite with a function
// that opens a fresh, empty instance (litestream's "run the same suite
// against every replica client").
//
// It is for tests only: production code never imports it.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ledger"
	"github.com/assayhq/assay/runtime/store"
)

// RunStoreSuite checks the store.Store contract that the services rely on.
// open returns a fresh, empty store, closed when the test ends.
func RunStoreSuite(t *testing.T, open func(testing.TB) store.Store) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		s := open(t)
		update(t, s, func(tx store.Tx) error {
			for _, k := range []string{"a/1", "a/2", "a/3", "b/1", "empty"} {
				v := []byte("v" + k)
				if k == "empty" {
					v = nil
				}
				if err := tx.Set(k, v); err != nil {
					return err
				}
			}
			if err := tx.Set("a/3", []byte("second")); err != nil {
				return err
			}
			if err := tx.Delete("absent"); err != nil {
				return fmt.Errorf("delete of an absent key: %w", err)
			}
			return tx.Delete("a/2")
		})
		view(t, s, func(tx store.Tx) error {
			for k, want := range map[string]string{"a/1": "va/1", "a/3": "second", "b/1": "vb/1", "empty": ""} {
				if v, err := tx.Get(k); err != nil || string(v) != want {
					t.Errorf("get %s: %q %v, want %q", k, v, err, want)
				}
			}
			for _, k := range []string{"a/2", "absent", "a"} {
				if _, err := tx.Get(k); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("get %q: %v, want ErrNotFound", k, err)
				}
			}
			return nil
		})
	})
	t.Run("ScanOrder", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// Keys order byte by byte, as Go strings do, whatever the bytes.
		s := open(t)
		keys := []string{"\x00", "\x00\x00", "\x01", "\xff", "\xff\xff", "\xff\x00", "a", "a\x00", "a\x00b", "a\xff", "a\xff\xff", "a\xff\xff\x00",
			"a/", "a/1", "a/10", "a/2", "a/1/x", "ab", "aa", "b", "B", "é", "e\u0301", "z\x7f", "z\x80"}
		update(t, s, func(tx store.Tx) error {
			for _, k := range keys {
				if err := tx.Set(k, []byte("v"+k)); err != nil {
					return err
				}
			}
			return nil
		})
		slices.Sort(keys)
		for _, prefix := range []string{"", "a", "a/", "a/1", "a\xff", "a\xff\xff", "\xff", "\xff\xff", "\x00", "z", "zz", "e", "é"} {
			var want []string
			for _, k := range keys {
				if strings.HasPrefix(k, prefix) {
					want = append(want, k)
				}
			}
			for _, reverse := range []bool{false, true} {
				if reverse {
					slices.Reverse(want)
				}
				var got []string
				view(t, s, func(tx store.Tx) error {
					return tx.Scan(prefix, reverse, func(k string, v []byte) error {
						if string(v) != "v"+k {
							t.Errorf("scan %q: value of %q is %q", prefix, k, v)
						}
						got = append(got, k)
						return nil
					})
				})
				if !slices.Equal(got, want) {
					t.Errorf("scan %q reverse=%v:\n got %q\nwant %q", prefix, reverse, got, want)
				}
			}
		}
	})
	t.Run("ScanLong", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// A scan longer than any page an implementation reads at once, in
		// several transactions' worth of keys, with neighbours on both
		// sides of the prefix.
		s := open(t)
		const n = 3000
		var want []string
		for i := 0; i < n; i += 500 {
			update(t, s, func(tx store.Tx) error {
				for j := i; j < i+500; j++ {
					k := fmt.Sprintf("p/%05d", j)
					want = append(want, k)
					if err := tx.Set(k, []byte(k)); err != nil {
						return err
					}
				}
				return nil
			})
		}
		update(t, s, func(tx store.Tx) error {
			for _, k := range []string{"p", "p.", "p0", "o/1", "q/1"} {
				if err := tx.Set(k, nil); err != nil {
					return err
				}
			}
			return nil
		})
		for _, reverse := range []bool{false, true} {
			if reverse {
				slices.Reverse(want)
			}
			var got []string
			view(t, s, func(tx store.Tx) error {
				return tx.Scan("p/", reverse, func(k string, v []byte) error {
					if string(v) != k {
						t.Fatalf("value of %s is %q", k, v)
					}
					got = append(got, k)
					return nil
				})
			})
			if !slices.Equal(got, want) {
				t.Errorf("reverse=%v: %d keys, want %d", reverse, len(got), len(want))
			}
		}
	})
	t.Run("ErrStop", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		s := open(t)
		setKeys(t, s, "s/1", "s/2", "s/3", "s/4")
		view(t, s, func(tx store.Tx) error {
			for _, reverse := range []bool{false, true} {
				var got []string
				err := tx.Scan("s/", reverse, func(k string, _ []byte) error {
					got = append(got, k)
					if len(got) == 2 {
						return store.ErrStop
					}
					return nil
				})
				want := "[s/1 s/2]"
				if reverse {
					want = "[s/4 s/3]"
				}
				if err != nil || fmt.Sprint(got) != want {
					t.Errorf("reverse=%v: %v %v, want %s and no error", reverse, got, err, want)
				}
			}
			// Any other error ends the scan and comes back unchanged.
			mine := errors.New("mine")
			calls := 0
			if err := tx.Scan("s/", false, func(string, []byte) error { calls++; return mine }); err != mine || calls != 1 {
				t.Errorf("scan returned %v after %d calls, want fn's error after 1", err, calls)
			}
			// The transaction is still usable after a scan that stopped.
			if v, err := tx.Get("s/4"); err != nil || string(v) != "vs/4" {
				t.Errorf("get after a stopped scan: %q %v", v, err)
			}
			return nil
		})
	})
	t.Run("GetInScan", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// fn may read and write the same transaction while it scans.
		s := open(t)
		const n = 100
		update(t, s, func(tx store.Tx) error {
			for i := range n {
				if err := tx.Set(fmt.Sprintf("idx/%03d", i), fmt.Appendf(nil, "rec/%03d", i)); err != nil {
					return err
				}
				if err := store.SetJSON(tx, fmt.Sprintf("rec/%03d", i), i); err != nil {
					return err
				}
			}
			return nil
		})
		update(t, s, func(tx store.Tx) error {
			seen := 0
			err := tx.Scan("idx/", false, func(k string, v []byte) error {
				target := string(v) // v is valid only during this call
				var rec int
				if err := store.GetJSON(tx, target, &rec); err != nil {
					return err
				}
				if fmt.Sprintf("idx/%03d", rec) != k {
					t.Errorf("%s points at %s = %d", k, target, rec)
				}
				seen++
				return store.SetJSON(tx, "copy/"+target, rec)
			})
			if err != nil || seen != n {
				t.Errorf("scan saw %d of %d: %v", seen, n, err)
			}
			return err
		})
		view(t, s, func(tx store.Tx) error {
			if got := count(t, tx, "copy/"); got != n {
				t.Errorf("%d copies written during the scan, want %d", got, n)
			}
			return nil
		})
	})
	t.Run("ReadYourWrites", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		s := open(t)
		setKeys(t, s, "r/old", "r/gone")
		update(t, s, func(tx store.Tx) error {
			must(t, tx.Set("r/new", []byte("n")))
			must(t, tx.Set("r/old", []byte("changed")))
			must(t, tx.Delete("r/gone"))
			if v, err := tx.Get("r/new"); err != nil || string(v) != "n" {
				t.Errorf("own write: %q %v", v, err)
			}
			if v, err := tx.Get("r/old"); err != nil || string(v) != "changed" {
				t.Errorf("own overwrite: %q %v", v, err)
			}
			if _, err := tx.Get("r/gone"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("own delete: %v, want ErrNotFound", err)
			}
			var got []string
			must(t, tx.Scan("r/", false, func(k string, v []byte) error { got = append(got, k+"="+string(v)); return nil }))
			if fmt.Sprint(got) != "[r/new=n r/old=changed]" {
				t.Errorf("scan of own writes: %v", got)
			}
			return nil
		})
	})
	t.Run("GetMany", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// GetMany reads as Gets would, the transaction's own writes
		// included, and what it read answers the transaction's later
		// reads until it writes the key.
		s := open(t)
		setKeys(t, s, "m/a", "m/b", "p/a", "p/b", "p/c", "p/e", "p/f", "p/g")
		update(t, s, func(tx store.Tx) error {
			must(t, tx.Set("m/new", []byte("n")))
			must(t, tx.Set("m/empty", []byte{}))
			must(t, tx.Delete("m/b"))
			vals, err := tx.GetMany("m/a", "m/b", "m/new", "m/none", "m/empty")
			if err != nil {
				return err
			}
			got := fmt.Sprintf("%q", vals)
			if want := `["vm/a" "" "n" "" ""]`; got != want || vals[1] != nil || vals[3] != nil || vals[4] == nil {
				t.Errorf("GetMany: %s (nil at 1 and 3 only), want %s", got, want)
			}
			if vals, err := tx.GetMany(); err != nil || len(vals) != 0 {
				t.Errorf("GetMany of no keys: %q %v", vals, err)
			}
			return nil
		})
		update(t, s, func(tx store.Tx) error {
			must(t, tx.Set("p/c", []byte("written before")))
			_, err := tx.GetMany("p/a", "p/b", "p/c", "p/none", "p/e", "p/f", "p/g")
			must(t, err)
			must(t, tx.Set("p/b", []byte("written after")))
			must(t, tx.Delete("p/e"))
			must(t, tx.Set("p/none", []byte("made after")))
			for _, want := range [][2]string{{"p/a", "vp/a"}, {"p/a", "vp/a"}, {"p/b", "written after"}, {"p/c", "written before"}, {"p/none", "made after"}} {
				if v, err := tx.Get(want[0]); err != nil || string(v) != want[1] {
					t.Errorf("Get %s: %q %v, want %q", want[0], v, err, want[1])
				}
			}
			if v, err := tx.Get("p/e"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("Get p/e: %q %v, want ErrNotFound", v, err)
			}
			vals, err := tx.GetMany("p/f", "p/h", "p/g", "p/f")
			if err != nil {
				return err
			}
			if got := fmt.Sprintf("%q", vals); got != `["vp/f" "" "vp/g" "vp/f"]` || vals[1] != nil {
				t.Errorf("GetMany of keys read before and not: %s (nil at 1 only)", got)
			}
			return nil
		})
	})
	t.Run("ErrRollback", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		s := open(t)
		setKeys(t, s, "k/kept", "k/deleted")
		want := fault.New(fault.Conflict, "wrong_state", "no")
		err := s.Update(ctx, func(tx store.Tx) error {
			must(t, tx.Set("k/new", []byte("v")))
			must(t, tx.Set("k/kept", []byte("changed")))
			must(t, tx.Delete("k/deleted"))
			if _, err := tx.Get("k/new"); err != nil { // the writes reached the transaction
				return err
			}
			return want
		})
		if err != want {
			t.Fatalf("Update returned %v, want fn's error unchanged", err)
		}
		view(t, s, func(tx store.Tx) error {
			if _, err := tx.Get("k/new"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a failed transaction's write was kept")
			}
			if v, _ := tx.Get("k/kept"); string(v) != "vk/kept" {
				t.Errorf("a failed transaction's overwrite was kept: %q", v)
			}
			if _, err := tx.Get("k/deleted"); err != nil {
				t.Errorf("a failed transaction's delete was kept: %v", err)
			}
			return nil
		})
	})
	t.Run("Counter", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// 50 concurrent read-modify-writes of one counter lose nothing.
		s := open(t)
		const n = 50
		parallel(n, func(int) {
			if err := s.Update(ctx, func(tx store.Tx) error { return add(tx, "counter", 1) }); err != nil {
				t.Error(err)
			}
		})
		if got := get(t, s, "counter"); got != n {
			t.Errorf("counter %d, want %d", got, n)
		}
	})
	t.Run("Transfers", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// Concurrent transfers between accounts, overlapping and disjoint,
		// each reading both balances before writing both: every one lands
		// exactly once, and the total is kept.
		s := open(t)
		const accounts, transfers = 10, 100
		update(t, s, func(tx store.Tx) error {
			for a := range accounts {
				if err := store.SetJSON(tx, fmt.Sprintf("acct/%d", a), 1000); err != nil {
					return err
				}
			}
			return nil
		})
		want := make([]int, accounts)
		for a := range want {
			want[a] = 1000
		}
		type move struct{ from, to, amount int }
		moves := make([]move, transfers)
		r := rand.New(rand.NewPCG(1, 2))
		for i := range moves {
			m := move{r.IntN(accounts), r.IntN(accounts - 1), 1 + r.IntN(20)}
			if m.to >= m.from {
				m.to++
			}
			moves[i] = m
			want[m.from] -= m.amount
			want[m.to] += m.amount
		}
		parallel(transfers, func(i int) {
			m := moves[i]
			err := s.Update(ctx, func(tx store.Tx) error {
				if err := add(tx, fmt.Sprintf("acct/%d", m.from), -m.amount); err != nil {
					return err
				}
				return add(tx, fmt.Sprintf("acct/%d", m.to), m.amount)
			})
			if err != nil {
				t.Error(err)
			}
		})
		total := 0
		for a := range accounts {
			got := get(t, s, fmt.Sprintf("acct/%d", a))
			total += got
			if got != want[a] {
				t.Errorf("account %d: %d, want %d", a, got, want[a])
			}
		}
		if total != accounts*1000 {
			t.Errorf("total %d, want %d", total, accounts*1000)
		}
	})
	t.Run("WriteSkew", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// Two doctors on call; each transaction reads both and, seeing two
		// on call, takes its own off. Serially the second sees one and
		// stays: at least one doctor remains on call, however the two
		// interleave. Both read before either writes (a barrier on the
		// first attempt), the case snapshot isolation alone gets wrong;
		// every other round they read with GetMany.
		s := open(t)
		for round := range 10 {
			a, b := fmt.Sprintf("oncall/%d/a", round), fmt.Sprintf("oncall/%d/b", round)
			update(t, s, func(tx store.Tx) error {
				must(t, store.SetJSON(tx, a, 1))
				return store.SetJSON(tx, b, 1)
			})
			var read sync.WaitGroup
			read.Add(2)
			parallel(2, func(i int) {
				own := []string{a, b}[i]
				first := true
				err := s.Update(ctx, func(tx store.Tx) error {
					if round%2 == 1 {
						// Read ahead: the reads are the transaction's
						// all the same.
						if _, err := tx.GetMany(a, b); err != nil {
							return err
						}
					}
					var x, y int
					if err := store.GetJSON(tx, a, &x); err != nil {
						return err
					}
					if err := store.GetJSON(tx, b, &y); err != nil {
						return err
					}
					if first {
						first = false
						read.Done()
						read.Wait()
					}
					if x+y < 2 {
						return nil
					}
					return store.SetJSON(tx, own, 0)
				})
				if err != nil {
					t.Error(err)
				}
			})
			if on := get(t, s, a) + get(t, s, b); on != 1 {
				t.Fatalf("round %d: %d doctors on call, want 1 (write skew)", round, on)
			}
		}
	})
	t.Run("ViewSnapshot", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// A View sees the store as it was when it began, whatever commits
		// meanwhile.
		s := open(t)
		setKeys(t, s, "snap/1")
		view(t, s, func(tx store.Tx) error {
			if v, err := tx.Get("snap/1"); err != nil || string(v) != "vsnap/1" {
				t.Fatalf("get: %q %v", v, err)
			}
			update(t, s, func(tx store.Tx) error {
				must(t, tx.Set("snap/1", []byte("changed")))
				return tx.Set("snap/2", []byte("new"))
			})
			if v, err := tx.Get("snap/1"); err != nil || string(v) != "vsnap/1" {
				t.Errorf("after a concurrent commit: %q %v, want the snapshot's value", v, err)
			}
			if n := count(t, tx, "snap/"); n != 1 {
				t.Errorf("scan sees %d keys, want the snapshot's 1", n)
			}
			return nil
		})
		if v := getRaw(t, s, "snap/1"); v != "changed" {
			t.Errorf("a later View sees %q", v)
		}
	})
	t.Run("Large", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		s := open(t)
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
		update(t, s, func(tx store.Tx) error { return tx.Set("big", big) })
		view(t, s, func(tx store.Tx) error {
			if v, err := tx.Get("big"); err != nil || !bytes.Equal(v, big) {
				t.Errorf("1 MiB value: %d bytes, %v", len(v), err)
			}
			return nil
		})
	})
	t.Run("ErrContext", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		s := open(t)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		ran := false
		if err := s.Update(cancelled, func(tx store.Tx) error { ran = true; return tx.Set("ctx/1", nil) }); !errors.Is(err, context.Canceled) {
			t.Errorf("Update on a cancelled context: %v, want context.Canceled", err)
		}
		if err := s.View(cancelled, func(tx store.Tx) error { ran = true; return nil }); !errors.Is(err, context.Canceled) {
			t.Errorf("View on a cancelled context: %v, want context.Canceled", err)
		}
		if ran {
			t.Errorf("fn ran on a cancelled context")
		}
		// Cancelled while fn runs: the transaction commits whole or not at
		// all.
		during, cancel := context.WithCancel(ctx)
		err := s.Update(during, func(tx store.Tx) error {
			must(t, tx.Set("ctx/a", []byte("a")))
			cancel()
			return tx.Set("ctx/b", []byte("b"))
		})
		var n int
		view(t, s, func(tx store.Tx) error { n = count(t, tx, "ctx/"); return nil })
		if err == nil && n != 2 || err != nil && n != 0 {
			t.Errorf("Update returned %v and kept %d of 2 writes", err, n)
		}
	})
	t.Run("Ledger", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// The ledger on the store: concurrent transfers through holds sum
		// to zero, and bad transfers are refused.
		s := open(t)
		parallel(20, func(i int) {
			err := s.Update(ctx, func(tx store.Tx) error {
				if err := ledger.Post(tx, ledger.Transfer{ID: fmt.Sprintf("fund-%d", i), From: "rail:dev", To: fmt.Sprintf("hold:escrow:%d", i), Amount: 10, Currency: "credits"}); err != nil {
					return err
				}
				return ledger.Post(tx, ledger.Transfer{ID: fmt.Sprintf("pay-%d", i), From: fmt.Sprintf("hold:escrow:%d", i), To: "agent:did:x:seller", Amount: 10, Currency: "credits"})
			})
			if err != nil {
				t.Error(err)
			}
		})
		view(t, s, func(tx store.Tx) error {
			sums, err := ledger.Sums(tx)
			if err != nil || sums["credits"] != 0 {
				t.Errorf("sums %v %v, want zero", sums, err)
			}
			seller, _ := ledger.Get(tx, "agent:did:x:seller")
			rail, _ := ledger.Get(tx, "rail:dev")
			if seller.Balances["credits"] != 200 || rail.Balances["credits"] != -200 || len(seller.Entries) != 20 {
				t.Errorf("seller %v rail %v", seller.Balances, rail.Balances)
			}
			return nil
		})
		for _, bad := range []ledger.Transfer{
			{ID: "z", From: "a", To: "b", Amount: 0, Currency: "c"},
			{ID: "z", From: "a", To: "a", Amount: 1, Currency: "c"},
			{ID: "", From: "a", To: "b", Amount: 1, Currency: "c"},
			{ID: "z", From: "a", To: "b", Amount: 1},
		} {
			if err := s.Update(ctx, func(tx store.Tx) error { return ledger.Post(tx, bad) }); err == nil {
				t.Errorf("%+v was posted", bad)
			}
		}
	})
}

// RunRangeSuite checks that conflicts cover the ranges a transaction
// scanned, not only the keys it read (no phantoms): a guarantee stronger
// than the services rely on, which PostgreSQL gives and badger does not
// (badger detects a conflict when a key the transaction read was written,
// so a key inserted into a range that a transaction found empty goes
// unnoticed).
func RunRangeSuite(t *testing.T, open func(testing.TB) store.Store) {
	ctx := context.Background()
	t.Run("PhantomSkew", func(t *testing.T) {
		t.Parallel() // each subtest opens a store of its own
		// The same with a range: each transaction counts the claims under
		// a prefix and adds its own only if there is none. One claim must
		// result, although the two write different keys.
		s := open(t)
		for round := range 10 {
			prefix := fmt.Sprintf("claim/%d/", round)
			var read sync.WaitGroup
			read.Add(2)
			parallel(2, func(i int) {
				first := true
				err := s.Update(ctx, func(tx store.Tx) error {
					n := 0
					if err := tx.Scan(prefix, false, func(string, []byte) error { n++; return nil }); err != nil {
						return err
					}
					if first {
						first = false
						read.Done()
						read.Wait()
					}
					if n > 0 {
						return nil
					}
					return tx.Set(fmt.Sprintf("%s%d", prefix, i), []byte("mine"))
				})
				if err != nil {
					t.Error(err)
				}
			})
			var n int
			view(t, s, func(tx store.Tx) error { n = count(t, tx, prefix); return nil })
			if n != 1 {
				t.Fatalf("round %d: %d claims, want 1", round, n)
			}
		}
	})
}

// update runs fn in s.Update, failing t on error.
func update(t testing.TB, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// view runs fn in s.View, failing t on error.
func view(t testing.TB, s store.Store, fn func(store.Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), fn); err != nil {
		t.Fatal(err)
	}
}

// setKeys sets each key to "v" + key.
func setKeys(t testing.TB, s store.Store, keys ...string) {
	t.Helper()
	update(t, s, func(tx store.Tx) error {
		for _, k := range keys {
			if err := tx.Set(k, []byte("v"+k)); err != nil {
				return err
			}
		}
		return nil
	})
}

// add adds d to the JSON number at key (absent: 0).
func add(tx store.Tx, key string, d int) error {
	var n int
	if err := store.GetJSON(tx, key, &n); err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return store.SetJSON(tx, key, n+d)
}

// get reads the JSON number at key.
func get(t testing.TB, s store.Store, key string) int {
	t.Helper()
	var n int
	view(t, s, func(tx store.Tx) error { return store.GetJSON(tx, key, &n) })
	return n
}

// getRaw reads the value at key.
func getRaw(t testing.TB, s store.Store, key string) string {
	t.Helper()
	var v []byte
	view(t, s, func(tx store.Tx) (err error) { v, err = tx.Get(key); return err })
	return string(v)
}

// count counts the keys with the prefix.
func count(t testing.TB, tx store.Tx, prefix string) int {
	t.Helper()
	n := 0
	if err := tx.Scan(prefix, false, func(string, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// must fails t on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// parallel runs fn(0..n-1) in n goroutines and waits for them.
func parallel(n int, fn func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { fn(i) })
	}
	wg.Wait()
}
