package e2e

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/assayhq/assay/runtime/receipt"
)

// chromiumPath is where Debian's chromium package puts the browser (.ci/run
// installs it).
const chromiumPath = "/usr/bin/chromium"

// updateScreenshot, when set in the environment, makes TestConsole write its
// screenshot of the console to docs/console.png (the image in docs/receipts.md).
const updateScreenshot = "ASSAY_UPDATE_SCREENSHOT"

// chrome is the headless Chromium the package's tests share: started by
// the first of them that needs one, stopped by TestMain (stopShared).
// Each test drives a tab of its own.
var chrome struct {
	once    sync.Once
	ctx     context.Context // the browser's; a tab's derives from it
	stop    func()
	skip    string // why there is none to start
	err     error
	profile string
}

// browser returns a context that drives a new tab of the shared headless
// Chromium, closed when tb ends; it skips tb when there is no Chromium.
func browser(tb testing.TB) context.Context {
	tb.Helper()
	if testing.Short() {
		tb.Skip("e2e: starts a browser")
	}
	chrome.once.Do(startChrome)
	if chrome.skip != "" {
		tb.Skip(chrome.skip)
	}
	if chrome.err != nil {
		tb.Fatal(chrome.err)
	}
	tab, cancelTab := chromedp.NewContext(chrome.ctx)
	// The first Do opens the tab; the steps after it get a bound of
	// their own.
	tctx, cancelTimeout := context.WithTimeout(tab, 2*time.Minute)
	tb.Cleanup(func() {
		cancelTimeout()
		cancelTab()
	})
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
		tb.Fatalf("open a tab: %v", err)
	}
	return tctx
}

// startChrome starts the shared browser.
func startChrome() {
	path := chromiumPath
	if _, err := os.Stat(path); err != nil {
		p, err := exec.LookPath("chromium")
		if err != nil {
			chrome.skip = fmt.Sprintf("e2e: no chromium at %s or on PATH (apt-get install chromium): the browser tests need one", chromiumPath)
			return
		}
		path = p
	}
	if chrome.profile, chrome.err = os.MkdirTemp("", "assay-e2e-chromium"); chrome.err != nil {
		return
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(chrome.profile),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1280, 1000),
		// The machine may have no network but loopback: nothing of the
		// browser's own may try to reach out.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		// A container's /dev/shm is often too small for the renderer.
		chromedp.Flag("disable-dev-shm-usage", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelBrowser := chromedp.NewContext(actx)
	chrome.ctx = ctx
	chrome.stop = func() {
		cancelBrowser()
		cancelAlloc()
		os.RemoveAll(chrome.profile)
	}
	// The first Do starts the browser and binds its life to ctx.
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		chrome.err = fmt.Errorf("start %s: %w", path, err)
	}
}

// TestConsole runs two cases through the court's HTTP API, opens the console
// in headless Chromium, finds both cases with their verdicts, and verifies
// the refund's receipt in the browser: valid as the court signed it, invalid
// once its subject, signature, key or envelope is changed.
func TestConsole(t *testing.T) {
	t.Parallel()
	ctx := browser(t) // first, so that without a browser the test skips at once
	s := start(t, t.TempDir(), "ASSAY_MARKET_AUTH=open")

	refund := s.deliveredCase(t, "did:e2e:seller", rows100, `{"rows":3}`)
	disputed := s.post(t, "/contracts/"+refund+"/dispute", `{"reason":"short"}`)
	if disputed.status != 200 || subjectOf(t, disputed.obj(t))["verdict"] != "refund" {
		t.Fatalf("dispute %d %s", disputed.status, disputed.body)
	}
	refundReceipt := strings.TrimPrefix(disputed.obj(t)["id"].(string), receipt.IDPrefix)
	release := s.deliveredCase(t, "did:e2e:seller", rows100, `{"rows":300}`)
	if r := s.post(t, "/contracts/"+release+"/dispute", `{}`); r.status != 200 || subjectOf(t, r.obj(t))["verdict"] != "release" {
		t.Fatalf("dispute %d %s", r.status, r.body)
	}

	// A market listing whose checker the market replayed at publication.
	wasm, err := os.ReadFile("../fixtures/checkers/squares.wasm")
	if err != nil {
		t.Fatal(err)
	}
	up := s.do(t, "POST", "/checkers", wasm, "Content-Type", "application/wasm")
	if up.status != 201 {
		t.Fatalf("upload %d %s", up.status, up.body)
	}
	pub := s.post(t, "/market/listings", `{"agent":"did:e2e:seller","title":"squares 1-3","problem_statement":"table of squares of the integers 1 to 3",
		"artifact":"1 1\n2 4\n3 9\n","artifact_type":"dataset","price_usd":"2.50","est_recompute_cost_usd":25,"checker":{"sha256":"`+up.obj(t)["sha256"].(string)+`"}}`)
	if pub.status != 201 {
		t.Fatalf("publish %d %s", pub.status, pub.body)
	}
	listing := pub.obj(t)["listing"].(map[string]any)["listing_id"].(string)
	// A replay batch: three runs of the checker, one failing.
	if r := s.post(t, "/replays", `{"checker":{"sha256":"`+up.obj(t)["sha256"].(string)+`"},"artifacts":["1 1\n2 4\n3 9\n","1 1\n2 5\n","1 1\n"],"no_memo":true}`); r.status != 200 {
		t.Fatalf("replays %d %s", r.status, r.body)
	}

	// The overview: cases with verdict, tier and payout; the ledger; the
	// market; the metrics card, whichever way /metrics answers; the
	// transparency log's size, once it includes the refund's receipt.
	checkpoint := waitLogged(t, s, refundReceipt)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.base+"/console"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="true"]`)),
	); err != nil {
		t.Fatalf("console: %v", err)
	}
	refundRow := text(t, ctx, `tr[data-contract="`+refund+`"]`)
	releaseRow := text(t, ctx, `tr[data-contract="`+release+`"]`)
	ledger := text(t, ctx, `#ledger`)
	replays := text(t, ctx, `#replays`)
	for _, c := range []struct{ row, verdict, payee string }{
		{refundRow, "refund", "did:e2e:buyer 40"},
		{releaseRow, "release", "did:e2e:seller 40"},
	} {
		if !strings.Contains(c.row, "resolved") || !strings.Contains(c.row, c.verdict) || !strings.Contains(c.row, "tier0") || !strings.Contains(c.row, c.payee) {
			t.Errorf("case row %q: want resolved, %s, tier0, %s", c.row, c.verdict, c.payee)
		}
	}
	if chart, err := chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS(`#verdicts svg title`))); err != nil || chart != "verdicts: refund 1, release 1" {
		t.Errorf("verdicts chart %q, %v", chart, err)
	}
	if !strings.Contains(ledger, "balanced") || !strings.Contains(ledger, "credits") {
		t.Errorf("ledger card %q", ledger)
	}
	if m := s.get(t, "/metrics"); m.status != 200 {
		if !strings.Contains(replays, "metrics unavailable") {
			t.Errorf("replays card %q, /metrics answering %d: want metrics unavailable", replays, m.status)
		}
	} else if !strings.Contains(replays, "checker runs") {
		t.Errorf("replays card %q with /metrics: want its checker runs", replays)
	} else if n, ok := metricSample(m.body, "assay_checker_runs_started_total"); ok && !strings.Contains(replays, fmt.Sprintf("%v checker runs", n)) {
		t.Errorf("replays card %q; /metrics says %v runs started", replays, n)
	}
	// The card shows a checkpoint at least as large as the one that
	// included the refund, and no larger than the latest.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#log[data-signed="true"]`))); err != nil {
		t.Errorf("log card: %v", err)
	} else {
		card := text(t, ctx, `#log`)
		shown, _ := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`#log`), "data-size"))
		n, err := strconv.Atoi(shown.Value)
		least, _ := strconv.Atoi(strings.Split(string(checkpoint), "\n")[1])
		most, _ := strconv.Atoi(strings.Split(string(getBytes(t, s.base+"/log/checkpoint")), "\n")[1])
		if err != nil || n < least || n > most || !strings.Contains(card, shown.Value+" receipts in the log") || !strings.Contains(card, "signed by the log's key") {
			t.Errorf("log card %q (size %q): want %d to %d receipts, signed", card, shown.Value, least, most)
		}
	}
	if market := text(t, ctx, `#market`); !strings.Contains(market, "active listings\t1") && !strings.Contains(market, "active listings 1") {
		t.Errorf("market card %q: want 1 active listing", market)
	}
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#listing-search input[name=query]`), "table of squares of the integers 1 to 3"),
		chromedp.Click(chromedp.CSS(`#listing-search button`)),
		chromedp.WaitVisible(chromedp.CSS(`#listings tbody tr`)),
	); err != nil {
		t.Fatalf("listing search: %v", err)
	}
	if row := text(t, ctx, `#listings tbody tr`); !strings.Contains(row, listing) || !strings.Contains(row, "squares 1-3") || !strings.Contains(row, "$2.5") {
		t.Errorf("listing row %q: want %s, squares 1-3, $2.5", row, listing)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	saveScreenshot(t, "console.png", shot, true)

	// Live: a case created while the page is open appears without a reload.
	created := s.post(t, "/contracts", `{"buyer":"did:e2e:buyer","seller":"did:e2e:late","price":7}`)
	if created.status != 200 {
		t.Fatalf("create %d %s", created.status, created.body)
	}
	late := created.obj(t)["contract_id"].(string)
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(`tr[data-contract="`+late+`"]`))); err != nil {
		t.Errorf("a new case on the open console: %v", err)
	} else if row := text(t, ctx, `tr[data-contract="`+late+`"]`); !strings.Contains(row, "created") || !strings.Contains(row, "7 credits") {
		t.Errorf("new case row %q", row)
	}

	// The console's reading of the Prometheus text format, on a sample
	// exposition: runs started, memo hits and runs by outcome kind; other
	// families, histograms and bad lines left out.
	figures, err := chromedp.Run(ctx, chromedp.Evaluate[struct {
		Runs      float64            `json:"runs"`
		MemoHits  float64            `json:"memoHits"`
		ByOutcome map[string]float64 `json:"byOutcome"`
	}](`replayFigures(parseMetrics([
		'# HELP assay_checker_runs_total Checker runs.',
		'# TYPE assay_checker_runs_total counter',
		'assay_checker_runs_total{engine="compiler",kind="wasm",outcome="pass"} 3',
		'assay_checker_runs_total{engine="compiler",kind="python",outcome="pass"} 2',
		'assay_checker_runs_total{engine="compiler",kind="wasm",outcome="fuel_exhausted"} 1e0',
		'assay_checker_runs_started_total 7',
		'assay_replay_memo_hits_total{tier="memory"} 4',
		'assay_replay_memo_hits_total{tier="store"} 1',
		'assay_http_requests_total{route="/a \\"b\\"",method="GET",status="200"} 7',
		'assay_checker_run_duration_seconds_bucket{kind="wasm",outcome="pass",le="+Inf"} 6',
		'garbage line',
	].join('\n')))`))
	if err != nil || figures.Runs != 7 || figures.MemoHits != 5 || len(figures.ByOutcome) != 2 || figures.ByOutcome["pass"] != 5 || figures.ByOutcome["fuel_exhausted"] != 1 {
		t.Errorf("replay figures from a sample exposition: %+v, %v; want 7 runs, 5 memo hits, pass 5, fuel_exhausted 1", figures, err)
	}

	// The browser asks GET / for HTML and gets the console; curl's */*
	// keeps the markdown.
	if err := chromedp.Do(ctx, chromedp.Navigate(s.base+"/"), chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="true"]`))); err != nil {
		t.Errorf("GET / in a browser: %v", err)
	} else if title, err := chromedp.Run(ctx, chromedp.Title()); err != nil || title != "Assay console" {
		t.Errorf("GET / in a browser: title %q, %v", title, err)
	}
	if r := s.get(t, "/"); !strings.HasPrefix(r.header.Get("Content-Type"), "text/markdown") {
		t.Errorf("GET / with Accept */*: %s", r.header.Get("Content-Type"))
	}

	// The case page, reached by its link: the receipt verifies in the
	// browser.
	area := chromedp.CSS(`textarea.receipt`)
	if err := chromedp.Do(ctx,
		chromedp.Navigate(s.base+"/console"),
		chromedp.WaitVisible(chromedp.CSS(`body[data-loaded="true"]`)),
		chromedp.Click(chromedp.CSS(`tr[data-contract="`+refund+`"] a`)),
		chromedp.WaitVisible(chromedp.CSS(`body[data-case="`+refund+`"]`)),
	); err != nil {
		t.Fatalf("case page: %v", err)
	}
	fields := text(t, ctx, `#case-fields`)
	receiptText, err := chromedp.Run(ctx, chromedp.Value(area))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fields, "refund") || !strings.Contains(fields, "tier0") {
		t.Errorf("case fields %q", fields)
	}
	consoleInclusion(t, ctx, s, refundReceipt)
	verify := func(tb testing.TB, receiptText string) (result, valid string) {
		tb.Helper()
		if err := chromedp.Do(ctx,
			chromedp.SetValue(area, receiptText),
			chromedp.Click(chromedp.CSS(`button.verify`)),
			chromedp.WaitVisible(chromedp.CSS(`.verify-result[data-valid]`)),
		); err != nil {
			tb.Fatalf("verify: %v", err)
		}
		a, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS(`.verify-result`), "data-valid"))
		if err != nil {
			tb.Fatal(err)
		}
		return text(tb, ctx, `.verify-result`), a.Value
	}
	result, valid := verify(t, receiptText)
	if valid != "true" || !strings.HasPrefix(result, "valid") {
		t.Fatalf("the court's receipt in the browser: %s (%q)", valid, result)
	}
	if shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
		t.Fatal(err)
	}
	saveScreenshot(t, "case.png", shot, false)

	// The same receipt, the court's own check, for comparison.
	s.verify(t, subjectReceipt(t, receiptText))

	stranger, strangerKey, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		name   string
		tamper func(r map[string]any)
		reason string
	}{
		{"Subject", func(r map[string]any) { r["credentialSubject"].(map[string]any)["verdict"] = "release" }, "subjectHash"},
		{"Payout", func(r map[string]any) {
			r["credentialSubject"].(map[string]any)["payout"] = map[string]any{"did:e2e:seller": 40}
		}, "subjectHash"},
		{"Signature", func(r map[string]any) {
			p := r["proof"].(map[string]any)
			sig, _ := base64.StdEncoding.DecodeString(p["signature"].(string))
			sig[0] ^= 1
			p["signature"] = base64.StdEncoding.EncodeToString(sig)
		}, "signature does not verify"},
		{"Key", func(r map[string]any) { // intact and well signed, by a key that is not the court's
			cs, _ := json.Marshal(r["credentialSubject"])
			canon, err := receipt.CanonicalJSON(cs)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(canon)
			p := r["proof"].(map[string]any)
			p["subjectHash"] = hex.EncodeToString(sum[:])
			p["publicKey"] = base64.StdEncoding.EncodeToString(stranger)
			p["signature"] = base64.StdEncoding.EncodeToString(ed25519.Sign(strangerKey, canon))
		}, "not one of the court's published keys"},
		{"Envelope", func(r map[string]any) { r["issuanceDate"] = "2020-01-01T00:00:00Z" }, "envelope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r map[string]any
			if err := json.Unmarshal([]byte(receiptText), &r); err != nil {
				t.Fatal(err)
			}
			tc.tamper(r)
			b, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			result, valid := verify(t, string(b))
			if valid != "false" || !strings.HasPrefix(result, "invalid") || !strings.Contains(result, tc.reason) {
				t.Errorf("tampered %s: %s (%q), want invalid: …%s…", tc.name, valid, result, tc.reason)
			}
		})
	}

	// And back: the untouched receipt verifies again, and so does the same
	// receipt with every object's keys in reverse order and other spacing,
	// as RFC 8785 canonicalises it.
	if _, valid := verify(t, receiptText); valid != "true" {
		t.Errorf("the court's receipt after the tampered ones: %s", valid)
	}
	var v any
	if err := json.Unmarshal([]byte(receiptText), &v); err != nil {
		t.Fatal(err)
	}
	reversed := reverseKeys(v)
	if strings.Contains(receiptText, reversed[:40]) {
		t.Fatalf("reversed receipt %.80s… reads as the original", reversed)
	}
	if result, valid := verify(t, reversed); valid != "true" {
		t.Errorf("the court's receipt with its keys reversed: %s (%q)", valid, result)
	}
}

// consoleInclusion checks the case page's word on the receipt rid in the
// transparency log: included, as the browser checked it; and the
// browser's check fails the same bundle with a receipt it does not pin, an
// audit path changed, or a checkpoint signed by another key.
func consoleInclusion(t *testing.T, ctx context.Context, s *server, rid string) {
	t.Helper()
	sel := `.log-result[data-receipt="` + rid + `"]`
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel+`[data-included]`))); err != nil {
		t.Fatalf("the receipt's inclusion on the case page: %v", err)
	}
	if got := text(t, ctx, sel); !strings.Contains(got, "in the transparency log at index") || strings.Contains(got, "✗") {
		t.Errorf("inclusion %q", got)
	}
	var b struct {
		Receipt map[string]any `json:"receipt"`
		Log     map[string]any `json:"log"`
	}
	if err := json.Unmarshal(s.get(t, "/receipts/"+rid+"?log=true").body, &b); err != nil {
		t.Fatal(err)
	}
	vkey := s.get(t, "/log/key").obj(t)["verifier_key"].(string)
	check := func(tb testing.TB, receipt, log map[string]any, vkey string) map[string]any {
		tb.Helper()
		r, _ := json.Marshal(receipt)
		l, _ := json.Marshal(log)
		k, _ := json.Marshal(vkey)
		got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](fmt.Sprintf(`checkInclusion(%s, %s, %s)`, r, l, k), chromedp.EvalAwaitPromise))
		if err != nil {
			tb.Fatal(err)
		}
		return got
	}
	if got := check(t, b.Receipt, b.Log, vkey); got["included"] != true {
		t.Fatalf("checkInclusion of the served bundle: %v", got)
	}
	clone := func(m map[string]any) map[string]any {
		c, _ := json.Marshal(m)
		var out map[string]any
		json.Unmarshal(c, &out)
		return out
	}
	other := clone(b.Receipt)
	other["proof"].(map[string]any)["signature"] = strings.Repeat("A", 86) + "=="
	path := clone(b.Log)
	lines := strings.Split(path["proof"].(string), "\n")
	lines[1] = "index " + fmt.Sprint(path["index"].(float64)+1)
	path["proof"] = strings.Join(lines, "\n")
	_, stranger, _ := ed25519.GenerateKey(rand.Reader)
	strangerKey := strings.Split(vkey, "+")[0] + "+" + strings.Split(vkey, "+")[1] + "+" + base64.StdEncoding.EncodeToString(append([]byte{1}, stranger.Public().(ed25519.PublicKey)...))
	for _, tc := range []struct {
		name      string
		receipt   map[string]any
		log       map[string]any
		vkey, not string
	}{
		{"OtherReceipt", other, b.Log, vkey, "pinned"},
		{"OtherIndex", b.Receipt, path, vkey, "pathOK"},
		{"OtherKey", b.Receipt, b.Log, strangerKey, "signed"},
	} {
		if got := check(t, tc.receipt, tc.log, tc.vkey); got["included"] != false || got[tc.not] != false {
			t.Errorf("%s: checkInclusion %v, want not included, %s false", tc.name, got, tc.not)
		}
	}
}

// reverseKeys writes v as JSON with every object's keys in reverse sorted
// order: the same value as encoding/json's, in other bytes.
func reverseKeys(v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Sort(sort.Reverse(sort.StringSlice(keys)))
		parts := make([]string, len(keys))
		for i, k := range keys {
			kb, _ := json.Marshal(k)
			parts[i] = string(kb) + ": " + reverseKeys(v[k])
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = reverseKeys(e)
		}
		return "[ " + strings.Join(parts, ", ") + " ]"
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// metricSample is the value of the unlabelled sample name in a Prometheus text
// exposition.
func metricSample(exposition []byte, name string) (float64, bool) {
	for _, line := range strings.Split(string(exposition), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// text is the visible text of the element sel (a CSS selector) selects.
func text(tb testing.TB, ctx context.Context, sel string) string {
	tb.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		tb.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// subjectReceipt decodes the console's receipt text for the court's /verify.
func subjectReceipt(tb testing.TB, text string) map[string]any {
	tb.Helper()
	var r map[string]any
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		tb.Fatal(err)
	}
	return r
}

// saveScreenshot keeps a screenshot as the test's artifact and, for the
// image of docs/receipts.md (shown) with updateScreenshot set, as
// docs/console.png.
func saveScreenshot(t *testing.T, name string, png []byte, shown bool) {
	t.Helper()
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot %s is not a PNG (%d bytes)", name, len(png))
	}
	p := filepath.Join(t.ArtifactDir(), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s (%d bytes)", p, len(png))
	if shown && os.Getenv(updateScreenshot) != "" {
		if err := os.WriteFile(filepath.Join("..", "docs", "console.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/console.png")
	}
}
