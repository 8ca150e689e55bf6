package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
	"github.com/assayhq/assay/storage"
	"github.com/assayhq/assay/wasm"
)

// serveLoopback serves the court over real HTTP on a loopback port and
// returns its base URL.
func serveLoopback(tb testing.TB) string {
	tb.Helper()
	db, err := storage.Open(tb.TempDir(), storage.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: time.Now, Rand: rand.NewChaCha8([32]byte{4})})
	if err != nil {
		tb.Fatal(err)
	}
	runner := serverRunner(tb, db)
	court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Runner: runner})
	if err != nil {
		tb.Fatal(err)
	}
	app := api.New(api.Config{Court: court, Keys: keys, Version: "test", Replays: replays.NewService(runner), Checkers: replays.NewLibrary(db, runner, nil)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	go app.Listener(ln)
	tb.Cleanup(func() { _ = app.Shutdown() })
	return "http://" + ln.Addr().String()
}

type httpResp struct {
	status int
	header http.Header
	body   []byte
}

func (r httpResp) code(tb testing.TB) string {
	tb.Helper()
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Code == "" {
		tb.Fatalf("not an error body (%d): %.300s", r.status, r.body)
	}
	return e.Error.Code
}

func post(tb testing.TB, url, ctype string, body []byte) httpResp {
	tb.Helper()
	res, err := http.Post(url, ctype, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return httpResp{status: res.StatusCode, body: b}
}

func uploadChecker(tb testing.TB, base, name string) string {
	tb.Helper()
	b, err := os.ReadFile("../fixtures/checkers/" + name)
	if err != nil {
		tb.Fatal(err)
	}
	if r := post(tb, base+"/checkers", "application/wasm", b); r.status != 201 && r.status != 200 {
		tb.Fatalf("upload %s: %d %s", name, r.status, r.body)
	}
	return checkers.SHA256(b)
}

func TestAPI_Replays(t *testing.T) {
	base := serveLoopback(t)
	pass := uploadChecker(t, base, "pass.wasm")
	fail := uploadChecker(t, base, "fail.wasm")

	t.Run("OK", func(t *testing.T) {
		body := fmt.Sprintf(`{"checker":{"sha256":%q,"fuel":1000000},"artifacts":[{"rows":1},"text",[1,2]]}`, pass)
		var got replays.Response
		for i := range 2 {
			r := post(t, base+"/replays", "application/json", []byte(body))
			if r.status != 200 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Count != 3 || len(got.Outcomes) != 3 {
				t.Fatalf("%s", r.body)
			}
			// The second batch is answered from the memo.
			if want := []int{0, 3}[i]; got.MemoHits != want {
				t.Errorf("batch %d: %d memo hits, want %d", i, got.MemoHits, want)
			}
		}
		for i, art := range []string{`{"rows":1}`, "text", `[1,2]`} {
			o := got.Outcomes[i]
			if o.Kind != wasm.KindPass || o.InputSHA256 != checkers.SHA256([]byte(art)) || o.FuelLimit != 1_000_000 {
				t.Errorf("outcome %d: %s input %s fuel limit %d", i, o.Kind, o.InputSHA256, o.FuelLimit)
			}
		}
		r := post(t, base+"/replays", "application/json", fmt.Appendf(nil, `{"checker":{"sha256":%q},"artifacts":["a","b"],"evidence":"e","no_memo":true}`, fail))
		if r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		json.Unmarshal(r.body, &got)
		if got.MemoHits != 0 || got.Outcomes[0].Kind != wasm.KindFail || got.Outcomes[1].ExitCode != 3 {
			t.Errorf("fail.wasm: %s", r.body)
		}
	})

	many := `"x"` + strings.Repeat(`,"x"`, replays.MaxBatch)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"ErrUnknownChecker", fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":["a"]}`, strings.Repeat("0", 64)), 404, "checker_not_found"},
		{"ErrBatchTooLarge", fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":[%s]}`, pass, many), 413, "batch_too_large"},
		{"ErrNoArtifacts", fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":[]}`, pass), 400, "missing_field"},
		{"ErrNoChecker", `{"artifacts":["a"]}`, 400, "missing_field"},
		{"ErrBadRef", `{"checker":{"sha256":"abc"},"artifacts":["a"]}`, 400, "invalid_checker"},
		{"ErrUnknownField", fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":["a"],"count":3}`, pass), 400, "unknown_field"},
		{"ErrUnknownRefField", fmt.Sprintf(`{"checker":{"sha256":%q,"timeout":1},"artifacts":["a"]}`, pass), 400, "unknown_field"},
		{"ErrJSON", `{"checker":`, 400, "invalid_json"},
		{"ErrType", `{"artifacts":"a"}`, 400, "invalid_type"},
		{"ErrNull", fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":[null]}`, pass), 400, "invalid_artifact"},
		{"ErrEncoding", fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":["a"],"encoding":"hex"}`, pass), 400, "invalid_encoding"},
		{"ErrBase64", fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":["%%%%"],"encoding":"base64"}`, pass), 400, "invalid_artifact"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, base+"/replays", "application/json", []byte(tc.body))
			if r.status != tc.status || r.code(t) != tc.code {
				t.Errorf("%d %s, want %d %s", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	t.Run("ErrBodyTooLarge", func(t *testing.T) {
		// Announce a body over the limit: the server answers before
		// reading it.
		conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /replays HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", replays.MaxBodyBytes+1)
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if r := (httpResp{status: res.StatusCode, body: b}); r.status != 413 || r.code(t) != "body_too_large" {
			t.Errorf("%d %.200s", r.status, r.body)
		}
	})
	t.Run("Hint", func(t *testing.T) {
		res, err := http.Get(base + "/replays")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var u struct{ Method, Path string }
		if json.NewDecoder(res.Body).Decode(&u); res.StatusCode != 200 || u.Method != "POST" || u.Path != "/replays" {
			t.Errorf("%d %+v", res.StatusCode, u)
		}
	})
}

// TestAPI_Replays_outputBudget: POST /replays with MaxBatch artifacts of a
// checker that writes its full output caps answers within the batch's
// output budget (untrimmed it would be 128 MiB), the trimmed outcomes
// keeping their hashes.
func TestAPI_Replays_outputBudget(t *testing.T) {
	base := serveLoopback(t)
	module, err := os.ReadFile("../runtime/replays/testdata/fullcaps.wasm")
	if err != nil {
		t.Fatal(err)
	}
	if r := post(t, base+"/checkers", "application/wasm", module); r.status != 201 && r.status != 200 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	artifacts := make([]string, replays.MaxBatch)
	for i := range artifacts {
		artifacts[i] = fmt.Sprint(i)
	}
	body := fmt.Sprintf(`{"checker":{"sha256":%q},"artifacts":[%s]}`, checkers.SHA256(module), strings.Join(artifacts, ","))
	r := post(t, base+"/replays", "application/json", []byte(body))
	if r.status != 200 {
		t.Fatalf("%d %.300s", r.status, r.body)
	}
	if bound := replays.MaxOutputBytes + replays.MaxBatch*(2<<10); len(r.body) > bound {
		t.Errorf("answer of %d bytes, over %d", len(r.body), bound)
	}
	var got replays.Response
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatal(err)
	}
	if got.Count != replays.MaxBatch || len(got.Trimmed) == 0 || got.Outcomes[0].Stdout == "" {
		t.Fatalf("count %d, %d trimmed, first stdout %d bytes", got.Count, len(got.Trimmed), len(got.Outcomes[0].Stdout))
	}
	last := got.Outcomes[replays.MaxBatch-1]
	if last.Kind != wasm.KindPass || last.Stdout != "" || last.StdoutSHA256 != got.Outcomes[0].StdoutSHA256 {
		t.Errorf("last outcome: %s, %d bytes of stdout, hash %s", last.Kind, len(last.Stdout), last.StdoutSHA256)
	}
}

// serverRunner is the one checker runner a server holds, wired as assay
// serve wires it: over the checker registry in db, memoised on db, in a
// sandbox closed when the test ends.
func serverRunner(tb testing.TB, db store.Store) *checkers.Runner {
	tb.Helper()
	sb, err := wasm.NewSandbox(context.Background(), wasm.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = sb.Close(context.Background()) })
	return checkers.NewRunner(sb, replays.Checkers(db), checkers.WithMemo(replays.NewMemo(db)))
}
