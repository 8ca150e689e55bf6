package idem_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/store"
)

func TestMutate(t *testing.T) {
	db := openMemory(t)
	ctx := context.Background()
	count := func(t *testing.T) int {
		t.Helper()
		var n int
		err := db.View(ctx, func(tx store.Tx) error {
			b, err := tx.Get("effect")
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			n = len(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// effect appends a byte to "effect": how many times a function ran to
	// commit.
	effect := func(tx store.Tx) error {
		b, err := tx.Get("effect")
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return tx.Set("effect", append(b, 'x'))
	}
	ok := func(tx store.Tx) (idem.Reply, error) {
		return idem.Reply{Body: []byte(`{"n":1}`), Created: true}, effect(tx)
	}
	r := idem.Request{Scope: "svc", Key: "k1", Fingerprint: idem.Fingerprint("POST /things", []byte(`{}`))}

	t.Run("OK", func(t *testing.T) {
		rep, err := idem.Mutate(ctx, db, r, ok)
		if err != nil || string(rep.Body) != `{"n":1}` || !rep.Created || rep.Replayed {
			t.Fatalf("first %+v %v", rep, err)
		}
		rep, err = idem.Mutate(ctx, db, r, ok)
		if err != nil || string(rep.Body) != `{"n":1}` || !rep.Created || !rep.Replayed {
			t.Fatalf("second %+v %v", rep, err)
		}
		if n := count(t); n != 1 {
			t.Fatalf("the function committed %d times, want 1", n)
		}
		got, err := idem.Replay(ctx, db, r)
		if err != nil || got == nil || !got.Replayed {
			t.Fatalf("Replay %+v %v", got, err)
		}
	})
	t.Run("ErrConflict", func(t *testing.T) {
		other := r
		other.Fingerprint = idem.Fingerprint("POST /things", []byte(`{"a":1}`))
		if _, err := idem.Mutate(ctx, db, other, ok); fault.CodeOf(err) != "idempotency_conflict" {
			t.Fatalf("Mutate err %v, want idempotency_conflict", err)
		}
		if _, err := idem.Replay(ctx, db, other); fault.CodeOf(err) != "idempotency_conflict" {
			t.Fatalf("Replay err %v, want idempotency_conflict", err)
		}
	})
	t.Run("ErrRollsBack", func(t *testing.T) {
		before := count(t)
		boom := errors.New("boom")
		r2 := idem.Request{Scope: "svc", Key: "k2", Fingerprint: "f"}
		_, err := idem.Mutate(ctx, db, r2, func(tx store.Tx) (idem.Reply, error) {
			if err := effect(tx); err != nil {
				return idem.Reply{}, err
			}
			return idem.Reply{}, boom
		})
		if !errors.Is(err, boom) || count(t) != before {
			t.Fatalf("err %v, effects %d -> %d: a failed function must commit nothing", err, before, count(t))
		}
		if rep, err := idem.Replay(ctx, db, r2); rep != nil || err != nil {
			t.Fatalf("a failed request left a reply: %+v %v", rep, err)
		}
	})
	t.Run("CommitThenFail", func(t *testing.T) {
		before := count(t)
		late := fault.New(fault.Conflict, "deadline_passed", "too late")
		r3 := idem.Request{Scope: "svc", Key: "k3", Fingerprint: "f"}
		fn := func(tx store.Tx) (idem.Reply, error) {
			if err := effect(tx); err != nil {
				return idem.Reply{}, err
			}
			return idem.Reply{Body: []byte(`{}`)}, idem.CommitThenFail(late)
		}
		rep, err := idem.Mutate(ctx, db, r3, fn)
		if err != late || rep.Body != nil {
			t.Fatalf("got %+v %v, want the request's own error and no reply", rep, err)
		}
		if count(t) != before+1 {
			t.Fatalf("the effect did not commit")
		}
		// No reply was kept: a retry runs again.
		if _, err := idem.Mutate(ctx, db, r3, fn); err != late || count(t) != before+2 {
			t.Fatalf("retry: %v, effects %d", err, count(t))
		}
	})
	t.Run("NoKey", func(t *testing.T) {
		before := count(t)
		for range 2 {
			if rep, err := idem.Mutate(ctx, db, idem.Request{Scope: "svc"}, ok); err != nil || rep.Replayed {
				t.Fatalf("%+v %v", rep, err)
			}
		}
		if count(t) != before+2 {
			t.Fatalf("a request without a key must run every time")
		}
	})
}

func TestFingerprint(t *testing.T) {
	// sha256 of the operation, a newline and the content, in its RFC 8785
	// form where it is JSON, whatever the transport.
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	for _, c := range []struct{ name, got, want string }{
		{"Raw", idem.Fingerprint("POST /checkers", []byte{0, 'a', 's', 'm'}), sum("POST /checkers\n\x00asm")},
		{"JSON", idem.Fingerprint("purchase", []byte(`{ "b": 2, "a":1}`)), sum("purchase\n{\"a\":1,\"b\":2}")},
		{"Marshalled", idem.FingerprintJSON("open", map[string]any{"z": 1, "a": "<&>"}), sum("open\n{\"a\":\"<&>\",\"z\":1}")},
	} {
		if c.got != c.want {
			t.Errorf("%s: %s, want %s", c.name, c.got, c.want)
		}
	}
}

// TestNew: a key is scoped by its operation and its actor; a request
// without one has none.
func TestNew(t *testing.T) {
	if r, err := idem.New("fund", "did:key:z", "", nil); err != nil || r != (idem.Request{}) {
		t.Errorf("New without a key = %+v %v", r, err)
	}
	for _, bad := range []string{"tab\there", "new\nline", "bidi\u202e", strings.Repeat("k", idem.MaxKey+1), "\xff"} {
		if _, err := idem.New("fund", "a", bad, nil); fault.CodeOf(err) != idem.ECodeInvalidKey {
			t.Errorf("New with key %q: %v", bad, err)
		}
	}
	a, _ := idem.New("fund", "alice", "k", []byte(`{}`))
	b, _ := idem.New("fund", "bob", "k", []byte(`{}`))
	c, _ := idem.New("accept", "alice", "k", []byte(`{}`))
	if a.Scope == b.Scope || a.Scope == c.Scope || a.Key != "k" || a.Fingerprint != idem.Fingerprint("fund", []byte(`{}`)) {
		t.Errorf("scopes %q %q %q", a.Scope, b.Scope, c.Scope)
	}
	if _, err := idem.New("fund", "alice", strings.Repeat("k", idem.MaxKey), nil); err != nil {
		t.Errorf("a key of MaxKey bytes: %v", err)
	}
}

// TestMutate_ReplayBytes: a replay answers the bytes the first request
// got, whatever they hold: markup that encoding/json would escape, and
// whitespace it would compact away.
func TestMutate_ReplayBytes(t *testing.T) {
	db := openMemory(t)
	ctx := context.Background()
	for i, body := range []string{
		`{"reason":"<b>&amp;</b>","n":1}`,
		"{\n  \"indented\": [1, 2]\n}",
		`"\u003c already escaped"`,
	} {
		r := idem.Request{Scope: "test", Key: "k" + string(rune('0'+i)), Fingerprint: "fp"}
		want := idem.Reply{Body: []byte(body), Created: i%2 == 0}
		first, err := idem.Mutate(ctx, db, r, func(store.Tx) (idem.Reply, error) { return want, nil })
		if err != nil || string(first.Body) != body {
			t.Fatalf("first: %s, %v", first.Body, err)
		}
		again, err := idem.Mutate(ctx, db, r, func(store.Tx) (idem.Reply, error) {
			t.Fatal("ran again")
			return idem.Reply{}, nil
		})
		if err != nil || !again.Replayed || again.Created != want.Created || string(again.Body) != body {
			t.Errorf("replay of %s: %+v (body %s), %v", body, again, again.Body, err)
		}
	}
}
