package receipt

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func TestOpenKeyring(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		c := newClock()
		data := filepath.Join(t.TempDir(), "data")
		k, err := OpenKeyring(KeyringConfig{Dir: data, Now: c.Now, Rand: seeded(1)})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(data, KeysDir, KeysFile)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("keys file mode %04o, want 0600", fi.Mode().Perm())
		}
		for _, d := range []string{data, filepath.Dir(path)} {
			di, err := os.Stat(d)
			if err != nil {
				t.Fatal(err)
			}
			if di.Mode().Perm() != 0o700 {
				t.Errorf("%s mode %04o, want 0700", d, di.Mode().Perm())
			}
		}
		keys := k.Keys()
		if len(keys) != 1 || keys[0].NotAfter != nil || !keys[0].NotBefore.Equal(c.t) {
			t.Fatalf("keys %+v", keys)
		}

		// A later start loads the same key, whatever its random source.
		c.Advance(time.Hour)
		again, err := OpenKeyring(KeyringConfig{Dir: data, Now: c.Now, Rand: seeded(2)})
		if err != nil {
			t.Fatal(err)
		}
		if again.Current() != k.Current() {
			t.Errorf("reopened key %+v, want %+v", again.Current(), k.Current())
		}
		read, err := ReadKeys(data)
		if err != nil || len(read) != 1 || read[0] != keys[0] {
			t.Errorf("ReadKeys = %+v, %v", read, err)
		}
	})
	t.Run("ErrNoKeys", func(t *testing.T) {
		if _, err := ReadKeys(t.TempDir()); !errors.Is(err, ErrNoKeys) {
			t.Fatalf("error %v, want ErrNoKeys", err)
		}
	})
	t.Run("ErrKeyFileMode", func(t *testing.T) {
		data := t.TempDir()
		if _, err := OpenKeyring(KeyringConfig{Dir: data, Now: newClock().Now, Rand: seeded(1)}); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(data, KeysDir, KeysFile), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := OpenKeyring(KeyringConfig{Dir: data, Now: newClock().Now, Rand: seeded(1)})
		if !errors.Is(err, ErrKeyFileMode) {
			t.Fatalf("error %v, want ErrKeyFileMode", err)
		}
	})
	t.Run("ErrCorrupt", func(t *testing.T) {
		data := t.TempDir()
		path := filepath.Join(data, KeysDir, KeysFile)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		body := `{"format":"assay-keys/v1","keys":[{"seed":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","public_key":"bm90IHRoaXMga2V5","not_before":"2026-01-01T00:00:00Z","not_after":null}]}`
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := OpenKeyring(KeyringConfig{Dir: data, Now: newClock().Now, Rand: seeded(1)}); err == nil {
			t.Fatal("opened a keys file whose public key does not match its seed")
		}
	})
}

func TestKeyring_Rotate(t *testing.T) {
	c := newClock()
	data := t.TempDir()
	k, err := OpenKeyring(KeyringConfig{Dir: data, Now: c.Now, Rand: seeded(1)})
	if err != nil {
		t.Fatal(err)
	}
	first := k.Current()
	old, err := k.Sign(KindVerdict, "before", sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}

	c.Advance(24 * time.Hour)
	fresh, err := k.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if fresh.PublicKey == first.PublicKey || k.Current() != fresh {
		t.Fatalf("rotation kept the old key signing")
	}
	keys := k.Keys()
	if len(keys) != 2 || keys[0].PublicKey != first.PublicKey || keys[0].NotAfter == nil || !keys[0].NotAfter.Equal(c.t) || !keys[1].NotBefore.Equal(c.t) || keys[1].NotAfter != nil {
		t.Fatalf("keys after rotation %+v", keys)
	}

	c.Advance(time.Minute)
	cur, err := k.Sign(KindVerdict, "after", sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	if cur.Proof.PublicKey != fresh.PublicKey {
		t.Error("the rotated-out key still signs")
	}

	// Both verify against the keyring, and against the reopened keyring.
	reopened, err := OpenKeyring(KeyringConfig{Dir: data, Now: c.Now, Rand: seeded(9)})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []*Verifier{k.Verifier(), reopened.Verifier()} {
		for _, r := range []Receipt{old, cur} {
			if res := v.Verify(mustMarshal(t, r)); !res.Valid {
				t.Errorf("%s: %s", r.ID, res.Reason)
			}
		}
	}

	t.Run("ErrClock", func(t *testing.T) {
		c.Advance(-48 * time.Hour)
		defer c.Advance(48 * time.Hour)
		if _, err := k.Rotate(); !errors.Is(err, ErrClock) {
			t.Errorf("Rotate: %v, want ErrClock", err)
		}
		if _, err := k.Sign(KindVerdict, "x", sampleVerdict()); !errors.Is(err, ErrClock) {
			t.Errorf("Sign: %v, want ErrClock", err)
		}
	})
}

func TestKeyring_Sign(t *testing.T) {
	c := newClock()
	k := mustKeyring(t, c)
	t.Run("OK", func(t *testing.T) {
		r, err := k.Sign(KindVerdict, "", sampleVerdict())
		if err != nil {
			t.Fatal(err)
		}
		if len(r.ShortID()) != 16 || r.ID != IDPrefix+r.ShortID() {
			t.Errorf("generated id %q", r.ID)
		}
		var s struct {
			Verdict string  `json:"verdict"`
			Receipt Binding `json:"receipt"`
		}
		if err := r.Subject(&s); err != nil {
			t.Fatal(err)
		}
		if s.Verdict != "refund" || s.Receipt != (Binding{ID: r.ShortID(), Type: KindVerdict, Issued: "2026-05-01T12:00:00Z"}) {
			t.Errorf("subject %+v", s)
		}
		if r.Issuer != k.Current().DID || r.Kind() != KindVerdict {
			t.Errorf("issuer %s kind %s", r.Issuer, r.Kind())
		}
	})
	t.Run("OKEmptyObject", func(t *testing.T) {
		if _, err := k.Sign("AssayStateChange", "s-1", struct{}{}); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name     string
		kind, id string
		subject  any
		err      error
	}{
		{"ErrBadKind", "verdict", "a", sampleVerdict(), ErrBadKind},
		{"ErrBadKindVC", "VerifiableCredential", "a", sampleVerdict(), ErrBadKind},
		{"ErrBadID", KindVerdict, "a b", sampleVerdict(), ErrBadID},
		{"ErrSubjectObject", KindVerdict, "a", []int{1}, ErrSubjectObject},
		{"ErrSubjectNil", KindVerdict, "a", nil, ErrSubjectObject},
		{"ErrReserved", KindVerdict, "a", map[string]any{"receipt": 1}, ErrReserved},
		{"ErrUnsafeInteger", KindVerdict, "a", map[string]int64{"amount": 1 << 60}, ErrUnsafeInteger},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := k.Sign(tc.kind, tc.id, tc.subject); !errors.Is(err, tc.err) {
				t.Errorf("error %v, want %v", err, tc.err)
			}
		})
	}
}

// TestKeyring_Hammer signs from many goroutines while the key rotates; every
// receipt must verify against the keyring's published keys.
func TestKeyring_Hammer(t *testing.T) {
	c := newClock() // fixed: every rotation lands in the same second
	k := mustKeyring(t, c)
	const workers, each = 8, 40
	receipts := make(chan Receipt, workers*each)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 5 {
			if _, err := k.Rotate(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range each {
				r, err := k.Sign(KindVerdict, "", sampleVerdict())
				if err != nil {
					t.Error(err)
					return
				}
				receipts <- r
			}
		})
	}
	wg.Wait()
	<-done
	close(receipts)
	v := k.Verifier()
	ids := map[string]bool{}
	for r := range receipts {
		if res := v.Verify(mustMarshal(t, r)); !res.Valid {
			t.Errorf("%s: %s", r.ID, res.Reason)
		}
		if ids[r.ID] {
			t.Errorf("id %s generated twice", r.ID)
		}
		ids[r.ID] = true
	}
	if got := len(k.Keys()); got != 6 {
		t.Errorf("%d keys after 5 rotations", got)
	}
}

func TestNewVerifier_badKeysPinNothing(t *testing.T) {
	k := mustKeyring(t, newClock())
	r, err := k.Sign(KindVerdict, "a", sampleVerdict())
	if err != nil {
		t.Fatal(err)
	}
	res := NewVerifier([]Key{{PublicKey: "garbage"}}).Verify(mustMarshal(t, r))
	if res.Valid {
		t.Fatalf("an unparseable pinned key widened trust to integrity only: %s", res.Reason)
	}
}
