package replays_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
)

// padded is the fixture pass.wasm with a custom section of about size
// bytes whose content is n: a valid checker of that size, distinct for
// each n.
func padded(tb testing.TB, n, size int) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "fixtures", "checkers", "pass.wasm"))
	if err != nil {
		tb.Fatal(err)
	}
	payload := make([]byte, 0, size)
	payload = append(payload, 3, 'p', 'a', 'd') // the custom section's name
	payload = binary.LittleEndian.AppendUint64(payload, uint64(n))
	payload = append(payload, make([]byte, max(0, size-len(payload)))...)
	b = append(b, 0) // a custom section
	b = binary.AppendUvarint(b, uint64(len(payload)))
	return append(b, payload...)
}

// digest is a hash of every key and value in db: what a refused upload
// must leave as it was.
func digest(tb testing.TB, db store.Store) [32]byte {
	tb.Helper()
	h := sha256.New()
	err := db.View(context.Background(), func(tx store.Tx) error {
		return tx.Scan("", false, func(k string, v []byte) error {
			h.Write([]byte(k + "\x00"))
			h.Write(v)
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	return [32]byte(h.Sum(nil))
}

type quotaClock struct{ t atomic.Int64 }

func (c *quotaClock) now() time.Time          { return time.Unix(0, c.t.Load()).UTC() }
func (c *quotaClock) advance(d time.Duration) { c.t.Add(int64(d)) }

func quotaLibrary(tb testing.TB, q replays.Quotas) (*replays.Library, store.Store, *quotaClock) {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	runner, _ := batchRunner(tb, nil, "pass.wasm")
	clock := &quotaClock{}
	clock.t.Store(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return replays.NewLibrary(db, runner, clock.now, replays.WithQuotas(q)), db, clock
}

// TestLibrary_Quota: an uploader stores up to its quota's bytes and is
// then refused with 429 upload_quota_exceeded and the wait, storing
// nothing; a checker already stored costs nothing; an agent and an
// address count apart; the bytes come back with time; the market's
// sources are charged to the same bucket.
func TestLibrary_Quota(t *testing.T) {
	t.Parallel()
	const size = 256 << 10
	ctx := context.Background()
	anon := principal.Actor{Addr: "192.0.2.1"}
	other := principal.Actor{Addr: "192.0.2.2"}
	agent := principal.Actor{Kind: principal.ByDIDKey, Agent: "did:key:z6Mkagent", KeyID: "did:key:z6Mkagent", Addr: "192.0.2.1"}
	module := func(n int) []byte { return padded(t, n, size) }
	per := time.Hour
	lib, db, clock := quotaLibrary(t, replays.Quotas{Address: replays.Quota{Bytes: 3*size + 1000, Per: per}, Agent: replays.Quota{Bytes: 8 * size, Per: per}})

	for n := range 3 {
		if r, err := lib.Put(ctx, anon, replays.KindWasm, module(n), idem.Request{}); err != nil || !r.Created {
			t.Fatalf("upload %d within the quota: %v (created %v)", n, err, r.Created)
		}
	}
	before := digest(t, db)
	_, err := lib.Put(ctx, anon, replays.KindWasm, module(3), idem.Request{})
	var qe *replays.QuotaError
	if !errors.As(err, &qe) || fault.CodeOf(err) != replays.ECodeUploadQuota || fault.KindOf(err) != fault.TooMany {
		t.Fatalf("the upload over the quota: %v, want 429 upload_quota_exceeded", err)
	}
	// The module's size less the 1000 bytes left comes back in less than a
	// third of the hour.
	if qe.Wait <= 0 || qe.Wait > per/3 {
		t.Errorf("wait %v, want about a third of %v", qe.Wait, per)
	}
	if digest(t, db) != before {
		t.Fatal("a refused upload changed the store")
	}
	if err := lib.KeepSource(ctx, anon, []byte("assert True # a new source\n"+string(make([]byte, 2000)))); fault.CodeOf(err) != replays.ECodeUploadQuota {
		t.Errorf("a market source over the quota: %v", err)
	}
	if digest(t, db) != before {
		t.Fatal("a refused source changed the store")
	}

	// What is stored already costs nothing and stores nothing.
	if r, err := lib.Put(ctx, anon, replays.KindWasm, module(1), idem.Request{}); err != nil || r.Created {
		t.Errorf("a stored checker again: %v (created %v)", err, r.Created)
	}
	// Another address, and an agent at the same address, count apart.
	if _, err := lib.Put(ctx, other, replays.KindWasm, module(3), idem.Request{}); err != nil {
		t.Errorf("another address: %v", err)
	}
	if _, err := lib.Put(ctx, agent, replays.KindWasm, module(4), idem.Request{}); err != nil {
		t.Errorf("an agent at the same address: %v", err)
	}
	// After the wait, the bytes are back.
	clock.advance(qe.Wait)
	if _, err := lib.Put(ctx, anon, replays.KindWasm, module(5), idem.Request{}); err != nil {
		t.Errorf("after the wait: %v", err)
	}
	if _, err := lib.Put(ctx, anon, replays.KindWasm, module(6), idem.Request{}); fault.CodeOf(err) != replays.ECodeUploadQuota {
		t.Errorf("right after the wait's bytes were used: %v", err)
	}
}

// TestLibrary_QuotaTooLarge: a checker larger than the whole quota can
// never fit: 413 checker_too_large, nothing stored.
func TestLibrary_QuotaTooLarge(t *testing.T) {
	t.Parallel()
	lib, db, _ := quotaLibrary(t, replays.Quotas{Address: replays.Quota{Bytes: 4096, Per: time.Hour}})
	before := digest(t, db)
	_, err := lib.Put(context.Background(), principal.Actor{Addr: "192.0.2.1"}, replays.KindWasm, padded(t, 0, 8192), idem.Request{})
	if fault.CodeOf(err) != replays.ECodeCheckerTooLarge || fault.KindOf(err) != fault.TooLarge {
		t.Fatalf("%v, want 413 checker_too_large", err)
	}
	if digest(t, db) != before {
		t.Fatal("a refused upload changed the store")
	}
}

// TestLibrary_QuotaHammer: uploads of one address at once are charged
// one at a time: exactly as many as the quota holds are stored.
func TestLibrary_QuotaHammer(t *testing.T) {
	t.Parallel()
	const size, fit, tries = 64 << 10, 5, 16
	lib, _, _ := quotaLibrary(t, replays.Quotas{Address: replays.Quota{Bytes: fit*size + 1000, Per: 24 * time.Hour}})
	var wg sync.WaitGroup
	var stored, refused atomic.Int64
	for n := range tries {
		wg.Go(func() {
			_, err := lib.Put(context.Background(), principal.Actor{Addr: "192.0.2.1"}, replays.KindWasm, padded(t, n, size), idem.Request{})
			switch {
			case err == nil:
				stored.Add(1)
			case fault.CodeOf(err) == replays.ECodeUploadQuota:
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if stored.Load() != fit || refused.Load() != tries-fit {
		t.Errorf("stored %d and refused %d of %d, want %d stored", stored.Load(), refused.Load(), tries, fit)
	}
}
