package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/assayhq/assay/runtime/rail"
)

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// copyDir copies the files under src to dst, with their modes (the keys'
// 0600 among them), and its symbolic links as links.
func copyDir(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm())
		}
		if d.Type()&fs.ModeSymlink != 0 { // the shared compile cache (launch)
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// paid is what testdata/x402/crash.mjs saw of one paid request.
type paid struct {
	crashed bool   // the connection closed without an answer
	status  int    // else the answer's status
	body    string // and body
	header  string // the PAYMENT-SIGNATURE the stock client sent
}

// payer is one stock x402 client (testdata/x402/crash.mjs), kept running
// to make paid requests one after another with the buyer's key.
type payer struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startPayer(tb testing.TB, dir string) *payer {
	tb.Helper()
	node := exec.Command("node", "crash.mjs", x402BuyerKey)
	node.Dir = dir
	var stderr strings.Builder
	node.Stderr = &lockedWriter{w: &stderr}
	in, err := node.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := node.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := node.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		in.Close()
		if err := node.Wait(); err != nil {
			tb.Errorf("the stock x402 client: %v\n%s", err, stderr.String())
		}
	})
	return &payer{in: in, out: bufio.NewScanner(out)}
}

// pay has the client POST body to url, paying what the 402 asks, the
// request carrying apiKey.
func (p *payer) pay(tb testing.TB, url, body, apiKey string) paid {
	tb.Helper()
	req, _ := json.Marshal(map[string]string{"url": url, "body": body, "api_key": apiKey})
	if _, err := p.in.Write(append(req, '\n')); err != nil {
		tb.Fatal(err)
	}
	if !p.out.Scan() {
		tb.Fatalf("the stock x402 client ended: %v", p.out.Err())
	}
	line := p.out.Text()
	var got struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
		Header string `json:"header"`
	}
	kind, rest, _ := strings.Cut(line, ": ")
	if (kind != "answered" && kind != "crashed") || json.Unmarshal([]byte(rest), &got) != nil {
		tb.Fatalf("the stock x402 client printed %s", line)
	}
	return paid{crashed: kind == "crashed", status: got.Status, body: got.Body, header: got.Header}
}

// died waits for a server killed by ASSAY_TEST_CRASH to be gone.
func (s *server) died(tb testing.TB, point string) {
	tb.Helper()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		tb.Fatalf("assay serve was not killed at %s\n%s", point, s.out)
	}
	if !strings.Contains(s.out.String(), "ASSAY_TEST_CRASH: killed at "+point) {
		tb.Fatalf("assay serve died, but not at %s:\n%s", point, tail(s.out.String(), 4096))
	}
}

// tryPost posts and answers the status, or 0 when the connection closed
// without an answer.
func (s *server) tryPost(path, body string, header ...string) int {
	req, _ := http.NewRequest("POST", s.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}

// TestX402_crashes kills the real `assay serve` on the x402 rail at every
// named point of a payment (before its intent is recorded, after it,
// after the facilitator's /verify, after its /settle, after the local
// commit) and of a refund (after the refund's intent, after it settled),
// three times each, while the stock x402 client (@x402/fetch) pays a
// purchase or a deposit, or while an upheld challenge refunds a purchase
// paid over x402, against the real `assay facilitator` with the chain's
// JSON-RPC. After each kill the server restarts on the same data (some
// rounds send the same signed payment again, which answers its first
// result or is made now) and one tick runs; then no intent is
// unresolved, the buyer's charge at the facilitator equals the credit
// the ledger holds from it (so no payment was credited twice and no
// refund paid twice), no settlement is credited twice, the operator holds
// at the facilitator what the market holds, and /ledger balances.
func TestX402_crashes(t *testing.T) {
	dir := x402Client(t)
	// One market for every point, made once and copied: the agents'
	// API keys, the checker and three listings, no payment yet.
	market := t.TempDir()
	keys := map[string]string{}
	for _, agent := range []string{"crash-seller", "crash-buyer", "crash-saver"} {
		_, keys[agent] = issueKey(t, market, agent)
	}
	s := startServe(t, market, nil, nil, 30*time.Second)
	squares := s.do(t, "POST", "/checkers", readFile(t, "../fixtures/checkers/squares.wasm"), "Content-Type", "application/wasm")
	if squares.status != http.StatusCreated {
		t.Fatalf("upload %d %s", squares.status, squares.body)
	}
	sum := squares.obj(t)["sha256"].(string)
	var listings []string
	for i := range 3 {
		r := s.post(t, "/market/listings", fmt.Sprintf(`{"agent":"crash-seller","title":"squares","problem_statement":"squares of one to three, take %d","artifact":"1 1\n2 4\n3 9\n","artifact_type":"dataset","price_usd":"0.%02d","checker":{"sha256":%q}}`, i, 10+i, sum),
			"Authorization", "Bearer "+keys["crash-seller"])
		if r.status != http.StatusCreated {
			t.Fatalf("publish %d %s", r.status, r.body)
		}
		listings = append(listings, r.obj(t)["listing"].(map[string]any)["listing_id"].(string))
	}
	s.stop(t)
	refunds := map[string]bool{rail.FaultRefundAfterIntent: true, rail.FaultRefundAfterSettle: true}
	for _, point := range rail.FaultPoints {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			data := t.TempDir()
			copyDir(t, market, data)
			crashes(t, dir, data, point, refunds[point], keys, listings)
		})
	}
}

// crashes kills a server three times at point, each time in the middle of
// a payment (or of a refund), on the market in data and one facilitator.
func crashes(t *testing.T, dir, data, point string, refund bool, keys map[string]string, listings []string) {
	buyer, operator := addressOf(t, x402BuyerKey), addressOf(t, x402OperatorKey)
	const funding = 100_000_000 // $100 in USDC units
	fac := startFacilitator(t, t.TempDir(), "--fund", fmt.Sprintf("%s=%d", buyer, funding))
	as := func(agent string) []string { return []string{"Authorization", "Bearer " + keys[agent]} }
	args := []string{"--rail", "x402", "--x402-facilitator", fac, "--x402-rpc", fac + "/rpc"}
	env := []string{"ASSAY_OPERATOR_TOKEN=op", "ASSAY_X402_OPERATOR_KEY=" + x402OperatorKey}
	client := startPayer(t, dir)
	for n := 1; n <= 3; n++ {
		round := fmt.Sprintf("%s, kill %d", point, n)
		s := startServe(t, data, args, append(env, "ASSAY_TEST_CRASH="+point), 30*time.Second)
		var p paid
		var purchase, resend, body, agent string
		switch {
		case refund:
			// A purchase paid over x402, then a challenge the checker
			// upholds: the process dies paying the refund back.
			listing := listings[n-1]
			p = client.pay(t, s.base+"/market/listings/"+listing+"/purchase", `{"agent":"crash-buyer"}`, keys["crash-buyer"])
			if p.crashed || p.status != http.StatusCreated {
				t.Fatalf("%s: the purchase to refund: %+v\n%s", round, p, tail(s.out.String(), 4096))
			}
			var b struct {
				Purchase struct {
					ID string `json:"purchase_id"`
				}
			}
			json.Unmarshal([]byte(p.body), &b)
			purchase = b.Purchase.ID
			if st := s.tryPost("/market/listings/"+listing+"/challenge", `{"agent":"crash-buyer","evidence":"4"}`, as("crash-buyer")...); st != 0 {
				t.Fatalf("%s: the challenge answered %d; the server should have died refunding", round, st)
			}
		case n == 2:
			resend, body, agent = "/market/wallets/crash-saver/deposit", `{"amount_usd":"0.25"}`, "crash-saver"
			p = client.pay(t, s.base+resend, body, keys[agent])
		default:
			resend, body, agent = "/market/listings/"+listings[n-1]+"/purchase", `{"agent":"crash-buyer"}`, "crash-buyer"
			p = client.pay(t, s.base+resend, body, keys[agent])
		}
		if !refund && !p.crashed {
			t.Fatalf("%s: the paid request was answered %d %s; the server should have died", round, p.status, p.body)
		}
		s.died(t, point)

		s = startServe(t, data, args, env, 30*time.Second)
		if resend != "" && n >= 2 {
			// The same signed payment, sent again: its first result, which
			// the restart resolved; or, when the process died before the
			// intent, the payment made now.
			r := s.do(t, "POST", resend, []byte(body), append([]string{"PAYMENT-SIGNATURE", p.header}, as(agent)...)...)
			if r.status != http.StatusCreated || r.header.Get(rail.HeaderPaymentResponse) == "" {
				t.Fatalf("%s: the payment sent again answered %d %s", round, r.status, r.body)
			}
			if replayed := r.header.Get("Idempotent-Replayed") == "true"; replayed != (point != rail.FaultBeforeIntent) {
				t.Fatalf("%s: the payment sent again answered replayed=%v", round, replayed)
			}
		}
		if r := s.post(t, "/market/tick", `{}`, "Authorization", "Bearer op"); r.status != http.StatusOK {
			t.Fatalf("%s: tick %d %s", round, r.status, r.body)
		}
		checkSettledUp(t, s, round, fac, buyer, operator, funding)
		if purchase != "" {
			pr := s.get(t, "/market/purchases/"+purchase).obj(t)
			if ref, _ := pr["refund_ref"].(string); pr["status"] != "refunded" || !strings.HasPrefix(ref, "x402:0x") {
				t.Fatalf("%s: the purchase after the refund: %v", round, pr)
			}
		}
		s.stop(t)
	}
}

// checkSettledUp checks, after a restart and a tick, that nothing is left
// unresolved and the money adds up (see TestX402_crashes).
func checkSettledUp(tb testing.TB, s *server, round, fac, buyer, operator string, funding int64) {
	tb.Helper()
	r := s.do(tb, "GET", "/market/intents", nil, "Authorization", "Bearer op")
	if r.status != http.StatusOK || r.obj(tb)["count"] != 0.0 {
		tb.Fatalf("%s: unresolved intents after a restart and a tick: %d %s", round, r.status, r.body)
	}
	if l := s.get(tb, "/ledger"); l.obj(tb)["balanced"] != true {
		tb.Fatalf("%s: ledger %s", round, l.body)
	}
	var acct struct {
		Balances map[string]int64 `json:"balances"`
		Entries  []struct {
			Transfer string `json:"transfer"`
			Amount   int64  `json:"amount"`
			Memo     string `json:"memo"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(s.get(tb, "/accounts/rail:x402").body, &acct); err != nil {
		tb.Fatal(err)
	}
	credited := int64(0)
	seen := map[string]string{}
	for _, e := range acct.Entries {
		memo := strings.ToLower(e.Memo)
		if e.Amount < 0 {
			i := strings.Index(memo, "x402:0x")
			if i < 0 {
				tb.Fatalf("%s: a payment in without a settlement: %+v", round, e)
			}
			ref := memo[i : i+len("x402:0x")+64]
			if prev, ok := seen[ref]; ok {
				tb.Fatalf("%s: settlement %s credited twice: %s and %s", round, ref, prev, e.Transfer)
			}
			seen[ref] = e.Transfer
		}
		if bytes.Contains([]byte(memo), []byte(strings.ToLower(buyer))) {
			credited -= e.Amount
		}
	}
	if charged := funding - balanceAt(tb, fac, buyer); charged != credited {
		tb.Fatalf("%s: the buyer was charged %d at the facilitator and the ledger credits %d from it", round, charged, credited)
	}
	if held := balanceAt(tb, fac, operator); held != -acct.Balances["usd-micro"] {
		tb.Fatalf("%s: the operator holds %d at the facilitator and the market %d", round, held, -acct.Balances["usd-micro"])
	}
	tb.Logf("%s: resolved; the buyer paid %d net, credited in %d settlements", round, credited, len(seen))
}
