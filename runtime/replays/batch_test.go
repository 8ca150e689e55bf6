package replays_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/internal/wasmtest"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/wasm"
)

// batchRunner returns a Runner over the fixture checkers, memoising in
// memo (none when nil), and the SHA-256 of the named fixture.
func batchRunner(tb testing.TB, memo *checkers.Memo, name string) (*checkers.Runner, string) {
	tb.Helper()
	dir := filepath.Join("..", "..", "fixtures", "checkers")
	src, err := checkers.OpenDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		tb.Fatal(err)
	}
	sb, err := wasm.NewSandbox(context.Background(), wasm.Config{CacheDir: wasmtest.CacheDir("")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sb.Close(context.Background()) })
	var opts []checkers.RunnerOption
	if memo != nil {
		opts = append(opts, checkers.WithMemo(memo))
	}
	return checkers.NewRunner(sb, src, opts...), checkers.SHA256(b)
}

// TestMemoStore_reopen: outcomes memoised on a badger store answer a new
// memo after the store is closed and opened again, without a run.
func TestMemoStore_reopen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r1, sum := batchRunner(t, replays.NewMemo(db), "primes.wasm")
	ref := checkers.Ref{SHA256: sum}
	in := wasm.Input{Artifact: []byte("100 25")}
	first, err := r1.Run(ctx, ref, in)
	if err != nil || first.Kind != wasm.KindPass {
		t.Fatalf("run: %v %s %s", err, first.Kind, first.Detail)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db, err = storage.Open(dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	memo := replays.NewMemo(db)
	r2, _ := batchRunner(t, memo, "primes.wasm")
	res := r2.Do(ctx, checkers.Job{Ref: ref, Input: in})
	if res.Err != nil || !res.Memo || r2.Runs() != 0 {
		t.Fatalf("after reopen: memo %v err %v runs %d, want a hit from the store", res.Memo, res.Err, r2.Runs())
	}
	a, _ := json.Marshal(first)
	b, _ := json.Marshal(res.Outcome)
	if string(a) != string(b) {
		t.Errorf("stored outcome differs:\n%s\n%s", a, b)
	}
	if s := memo.Stats(); s.StoreHits != 1 || s.StoreErrors != 0 {
		t.Errorf("stats %+v", s)
	}
	// Another input misses and runs.
	if res := r2.Do(ctx, checkers.Job{Ref: ref, Input: wasm.Input{Artifact: []byte("100 24")}}); res.Memo || res.Outcome.Kind != wasm.KindFail {
		t.Errorf("another input: memo %v %s", res.Memo, res.Outcome.Kind)
	}
}

func TestService_Replay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	runner, sum := batchRunner(t, checkers.NewMemo(checkers.MemoConfig{}), "primes.wasm")
	svc := replays.NewService(runner)
	raw := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i, v := range s {
			out[i] = json.RawMessage(v)
		}
		return out
	}
	// primes.wasm passes "N K" when there are K primes up to N.
	ok, bad := `"100 25"`, `"100 24"`

	t.Run("OK", func(t *testing.T) {
		res, err := svc.Replay(ctx, replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(ok, bad, " [1, 2] ")})
		if err != nil {
			t.Fatal(err)
		}
		if res.Count != 3 || len(res.Outcomes) != 3 {
			t.Fatalf("count %d, %d outcomes", res.Count, len(res.Outcomes))
		}
		if !res.Outcomes[0].Pass || res.Outcomes[1].Pass {
			t.Errorf("pass %v %v, want true false", res.Outcomes[0].Pass, res.Outcomes[1].Pass)
		}
		// A JSON string is given as its contents, any other value as its
		// JSON text.
		if res.Outcomes[0].InputSHA256 != checkers.SHA256([]byte("100 25")) || res.Outcomes[2].InputSHA256 != checkers.SHA256([]byte("[1, 2]")) {
			t.Errorf("inputs %s %s", res.Outcomes[0].InputSHA256, res.Outcomes[2].InputSHA256)
		}
		b64, err := svc.Replay(ctx, replays.Request{Checker: checkers.Ref{SHA256: sum}, Encoding: replays.EncodingBase64,
			Artifacts: raw(mustQuote(base64.StdEncoding.EncodeToString([]byte("100 25"))))})
		if err != nil || b64.Outcomes[0].InputSHA256 != res.Outcomes[0].InputSHA256 || b64.MemoHits != 1 {
			t.Fatalf("base64: %v %+v", err, b64)
		}
		noMemo, err := svc.Replay(ctx, replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(ok), NoMemo: true})
		if err != nil || noMemo.MemoHits != 0 {
			t.Fatalf("no_memo: %v %+v", err, noMemo)
		}
	})

	many := make([]json.RawMessage, replays.MaxBatch+1)
	for i := range many {
		many[i] = json.RawMessage(ok)
	}
	for _, tc := range []struct {
		name string
		req  replays.Request
		code string
		kind fault.Kind
	}{
		{"ErrNoChecker", replays.Request{Artifacts: raw(ok)}, "missing_field", fault.Invalid},
		{"ErrNoArtifacts", replays.Request{Checker: checkers.Ref{SHA256: sum}}, "missing_field", fault.Invalid},
		{"ErrBatch", replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: many}, "batch_too_large", fault.TooLarge},
		{"ErrRef", replays.Request{Checker: checkers.Ref{SHA256: "ABC"}, Artifacts: raw(ok)}, "invalid_checker", fault.Invalid},
		{"ErrKind", replays.Request{Checker: checkers.Ref{SHA256: sum, Kind: "lua"}, Artifacts: raw(ok)}, "invalid_checker", fault.Invalid},
		{"ErrFuel", replays.Request{Checker: checkers.Ref{SHA256: sum, Fuel: wasm.MaxFuel + 1}, Artifacts: raw(ok)}, "invalid_checker", fault.Invalid},
		{"ErrUnknown", replays.Request{Checker: checkers.Ref{SHA256: strings.Repeat("0", 64)}, Artifacts: raw(ok)}, "checker_not_found", fault.NotFound},
		{"ErrNull", replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(ok, "null")}, "invalid_artifact", fault.Invalid},
		{"ErrEncoding", replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(ok), Encoding: "hex"}, "invalid_encoding", fault.Invalid},
		{"ErrBase64", replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(`"!!"`), Encoding: "base64"}, "invalid_artifact", fault.Invalid},
		{"ErrBase64NotString", replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(ok), Encoding: "base64"}, "invalid_artifact", fault.Invalid},
		{"ErrEvidence", replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(ok), Evidence: json.RawMessage("null")}, "invalid_evidence", fault.Invalid},
		{"ErrTooBig", replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(mustQuote(strings.Repeat("x", replays.MaxArtifactBytes+1)))}, "artifact_too_large", fault.TooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs := runner.Runs()
			_, err := svc.Replay(ctx, tc.req)
			if fault.CodeOf(err) != tc.code || fault.KindOf(err) != tc.kind {
				t.Errorf("err %v (%s, %s), want %s (%s)", err, fault.CodeOf(err), fault.KindOf(err), tc.code, tc.kind)
			}
			if runner.Runs() != runs {
				t.Errorf("a refused batch ran %d replays", runner.Runs()-runs)
			}
		})
	}
	t.Run("ErrStore", func(t *testing.T) {
		// A store that cannot give the checker is the server's trouble
		// (here a 503), never the caller's invalid_checker.
		sb, err := wasm.NewSandbox(ctx, wasm.Config{CacheDir: wasmtest.CacheDir("")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close(context.Background()) })
		failing := checkers.NewRunner(sb, failingSource{store.ErrContention})
		_, err = replays.NewService(failing).Replay(ctx, replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(ok)})
		if fault.CodeOf(err) != "store_contention" || fault.KindOf(err) != fault.Unavailable {
			t.Errorf("err %v (code %s), want store_contention", err, fault.CodeOf(err))
		}
	})
	t.Run("ErrUnavailable", func(t *testing.T) {
		_, err := replays.NewService(nil).Replay(ctx, replays.Request{Checker: checkers.Ref{SHA256: sum}, Artifacts: raw(ok)})
		if fault.CodeOf(err) != "checkers_unavailable" {
			t.Errorf("err %v", err)
		}
	})
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// failingSource is a checkers.Source whose store fails.
type failingSource struct{ err error }

func (f failingSource) Checker(string) ([]byte, error) { return nil, f.err }
