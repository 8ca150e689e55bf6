package api_test

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"filippo.io/torchwood"
	"github.com/gofiber/fiber/v2"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/translog"
	"github.com/assayhq/assay/storage"
)

// loggedApp is a court whose receipts go to a transparency log, served
// with it; the log integrates when the test calls Round.
func loggedApp(tb testing.TB) (*fiber.App, *translog.Log) {
	tb.Helper()
	db, err := storage.Open("", storage.Options{InMemory: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	now := func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }
	keys, err := receipt.OpenKeyring(receipt.KeyringConfig{Dir: tb.TempDir(), Now: now, Rand: rand.NewChaCha8([32]byte{3})})
	if err != nil {
		tb.Fatal(err)
	}
	keys.LogReceipts()
	lkey, err := receipt.OpenLogKey(receipt.LogKeyConfig{Dir: tb.TempDir(), Origin: "api.test/log", Rand: rand.NewChaCha8([32]byte{4})})
	if err != nil {
		tb.Fatal(err)
	}
	l, err := translog.New(translog.Config{Store: db, Key: lkey})
	if err != nil {
		tb.Fatal(err)
	}
	court, err := escrow.New(context.Background(), escrow.Config{Store: db, Signer: keys, Now: now})
	if err != nil {
		tb.Fatal(err)
	}
	return api.New(api.Config{Court: court, Keys: keys, Version: "test", Log: l}), l
}

// TestLog_Routes: the checkpoint, the key, and the tiles and entry
// bundles at their C2SP paths, as a tlog client reads them; a receipt
// with its proof; a tile path of every length a log can have is a route,
// and nothing longer or spelled otherwise is.
func TestLog_Routes(t *testing.T) {
	t.Parallel()
	app, l := loggedApp(t)
	if r := do(t, app, call{method: "GET", path: "/log/checkpoint"}); r.status != 404 || r.code(t) != translog.ECodeNoCheckpoint {
		t.Fatalf("a checkpoint before any: %d %s", r.status, r.body)
	}
	id := deliveredContract(t, app, rows100, `{"rows":3}`)
	d := do(t, app, call{method: "POST", path: "/contracts/" + id + "/dispute", body: `{}`})
	if d.status != 200 {
		t.Fatalf("dispute: %d %s", d.status, d.body)
	}
	rid := strings.TrimPrefix(d.json(t)["id"].(string), receipt.IDPrefix)
	if r := do(t, app, call{method: "GET", path: "/receipts/" + rid}); r.header.Get("Assay-Log-Status") != "pending" || r.header.Get("Assay-Log-Index") != "" {
		t.Fatalf("before the round: %v", r.header)
	}
	if _, err := l.Round(context.Background()); err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		key := do(t, app, call{method: "GET", path: "/log/key"})
		var k translog.Key
		if err := json.Unmarshal(key.body, &k); err != nil || key.status != 200 || k.Origin != "api.test/log" {
			t.Fatalf("/log/key: %d %s", key.status, key.body)
		}
		cp := do(t, app, call{method: "GET", path: "/log/checkpoint"})
		if cp.status != 200 || !strings.HasPrefix(cp.header.Get("Content-Type"), "text/plain") {
			t.Fatalf("/log/checkpoint: %d %v", cp.status, cp.header)
		}
		c, err := torchwood.ParseCheckpoint(openNote(t, k.VerifierKey, cp.body))
		if err != nil || c.N < 1 {
			t.Fatalf("checkpoint %q: %v", cp.body, err)
		}
		// The receipt with its proof: its entry at its index, under the
		// published tree, read from the served tiles.
		r := do(t, app, call{method: "GET", path: "/receipts/" + rid + "?log=true"})
		var b struct {
			Receipt json.RawMessage
			Log     translog.Inclusion
		}
		if err := json.Unmarshal(r.body, &b); err != nil || r.status != 200 || b.Log.Status != "included" || b.Log.Index == nil {
			t.Fatalf("?log=true: %d %s", r.status, r.body)
		}
		if r.header.Get("Assay-Log-Status") != "included" || r.header.Get("Assay-Log-Index") != "0" {
			t.Fatalf("headers: %v", r.header)
		}
		hr := tlog.TileHashReader(tlog.Tree{N: c.N, Hash: c.Hash}, routeTiles{tb: t, app: app})
		p, err := tlog.ProveRecord(c.N, *b.Log.Index, hr)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.CheckRecord(p, c.N, c.Hash, *b.Log.Index, tlog.RecordHash([]byte(b.Log.Entry))); err != nil {
			t.Fatal(err)
		}
		if di := do(t, app, call{method: "GET", path: "/receipts/" + rid + "?log=true&format=di"}); di.status != 200 || !strings.Contains(string(di.body), `"log":{`) {
			t.Fatalf("?log=true&format=di: %d %s", di.status, di.body)
		}
		bundle := do(t, app, call{method: "GET", path: "/tile/entries/000.p/1"})
		if bundle.status != 404 {
			t.Fatalf("a tile outside /log: %d", bundle.status)
		}
		if e := do(t, app, call{method: "GET", path: "/log/tile/entries/000.p/" + strconv.FormatInt(c.N, 10)}); e.status != 200 || !strings.Contains(string(e.body), rid) ||
			e.header.Get("Content-Type") != fiber.MIMEOctetStream {
			t.Fatalf("the entry bundle: %d %v %q", e.status, e.header, e.body)
		}
	})

	t.Run("Lengths", func(t *testing.T) {
		// The longest tile path: the last partial tile of the largest log.
		longest := torchwood.TilePath(tlog.Tile{H: 8, L: 0, N: math.MaxInt64 / 256, W: 7})
		if got := strings.Count(longest, "/"); got != 8 {
			t.Fatalf("%s has %d segments below tile/", longest, got)
		}
		for _, tc := range []struct {
			path   string
			status int
			code   string
		}{
			{"/log/tile/0/000", 404, translog.ECodeTileNotFound},
			{"/log/tile/0/x001/234.p/5", 404, translog.ECodeTileNotFound},
			{"/log/" + longest, 404, translog.ECodeTileNotFound},
			{"/log/" + strings.Replace(longest, "/0/", "/entries/", 1), 404, translog.ECodeTileNotFound},
			{"/log/tile/0/1", 400, translog.ECodeBadTilePath},
			{"/log/tile/-1/000", 400, translog.ECodeBadTilePath},
			{"/log/tile/0/000.p/256", 400, translog.ECodeBadTilePath},
			{"/log/tile/0/x000/000", 400, translog.ECodeBadTilePath},
			{"/log/tile/0", 404, "route_not_found"},
			{"/log/tile/0/000/", 404, "route_not_found"},
			{"/log/" + longest + "/1", 404, "route_not_found"},
			{"/log/Tile/0/000", 404, "route_not_found"},
		} {
			if r := do(t, app, call{method: "GET", path: tc.path}); r.status != tc.status || r.code(t) != tc.code {
				t.Errorf("GET %s: %d %s, want %d %s", tc.path, r.status, r.body, tc.status, tc.code)
			}
		}
	})

	t.Run("ErrInvalidLog", func(t *testing.T) {
		r := do(t, app, call{method: "GET", path: "/receipts/" + rid + "?log=yes"})
		if r.status != 400 || r.code(t) != "invalid_log" {
			t.Fatalf("?log=yes: %d %s", r.status, r.body)
		}
	})
}

// TestLog_Off: a server that keeps no log serves none of its routes, and
// refuses a receipt's proof.
func TestLog_Off(t *testing.T) {
	t.Parallel()
	app := mustApp(t)
	for _, p := range []string{"/log/checkpoint", "/log/key", "/log/tile/0/000"} {
		if r := do(t, app, call{method: "GET", path: p}); r.status != 404 || r.code(t) != "route_not_found" {
			t.Errorf("GET %s: %d %s", p, r.status, r.body)
		}
	}
	id := deliveredContract(t, app, rows100, `{"rows":3}`)
	d := do(t, app, call{method: "POST", path: "/contracts/" + id + "/dispute", body: `{}`})
	rid := strings.TrimPrefix(d.json(t)["id"].(string), receipt.IDPrefix)
	if r := do(t, app, call{method: "GET", path: "/receipts/" + rid + "?log=true"}); r.status != 404 || r.code(t) != "log_not_kept" {
		t.Fatalf("?log=true without a log: %d %s", r.status, r.body)
	}
	if r := do(t, app, call{method: "GET", path: "/receipts/" + rid}); r.status != 200 || r.header.Get("Assay-Log-Status") != "" {
		t.Fatalf("a receipt without a log: %d %v", r.status, r.header)
	}
}

// routeTiles reads tiles through the app's routes, at the paths C2SP
// tlog-tiles gives them (torchwood writes them).
type routeTiles struct {
	tb  testing.TB
	app *fiber.App
}

func (routeTiles) Height() int { return translog.TileHeight }

func (r routeTiles) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		res := do(r.tb, r.app, call{method: "GET", path: "/log/" + torchwood.TilePath(t)})
		if res.status != 200 {
			r.tb.Fatalf("GET /log/%s: %d %s", torchwood.TilePath(t), res.status, res.body)
		}
		out[i] = res.body
	}
	return out, nil
}

func (routeTiles) SaveTiles([]tlog.Tile, [][]byte) {}

// openNote verifies a signed note with the verifier key vkey and returns
// its text.
func openNote(tb testing.TB, vkey string, msg []byte) string {
	tb.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		tb.Fatal(err)
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		tb.Fatalf("%q: %v", msg, err)
	}
	return n.Text
}
