package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// Fixed test keys, funded only on the local facilitator.
const (
	x402BuyerKey    = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
	x402OperatorKey = "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a"
	x402Funding     = 20_000_000 // units of USDC (6 decimals): $20
)

var facilitatorListening = regexp.MustCompile(`facilitator on (http://\S+)`)

// startFacilitator runs `assay facilitator` on a free loopback port.
func startFacilitator(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(binary, append([]string{"facilitator", "--addr", "127.0.0.1:0", "--data", dir}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &lockedWriter{w: &stderr}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	found, done := make(chan string, 1), make(chan error, 1)
	go func() {
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			if m := facilitatorListening.FindStringSubmatch(lines.Text()); m != nil {
				found <- m[1]
			}
		}
		done <- cmd.Wait()
	}()
	var url string
	select {
	case url = <-found:
	case err := <-done:
		tb.Fatalf("assay facilitator exited: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		tb.Fatalf("assay facilitator did not start\n%s", stderr.String())
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("assay facilitator exited with %v\n%s", err, stderr.String())
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			tb.Errorf("assay facilitator did not stop on SIGTERM")
		}
	})
	return url
}

// x402Client returns the directory of the stock x402 client's scripts,
// running `npm ci` there when node_modules is absent, and skips tb when
// node or npm is not installed, or in -short.
func x402Client(tb testing.TB) string {
	tb.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			tb.Skipf("%s is not installed: x402 is not tested with the protocol's own client", tool)
		}
	}
	if testing.Short() {
		tb.Skip("e2e: starts servers")
	}
	dir := filepath.Join("testdata", "x402")
	x402Install.Do(func() {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@x402", "fetch")); err == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		ci := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		ci.Dir = dir
		if out, err := ci.CombinedOutput(); err != nil {
			x402InstallErr = fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
		}
	})
	if x402InstallErr != nil {
		tb.Fatal(x402InstallErr)
	}
	return dir
}

// x402Install runs npm ci once for the tests that run the stock client.
var (
	x402Install    sync.Once
	x402InstallErr error
)

func balanceAt(tb testing.TB, facilitator, address string) int64 {
	tb.Helper()
	resp, err := http.Get(facilitator + "/balances/" + address)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var b struct{ Balance string }
	if err := json.NewDecoder(resp.Body).Decode(&b); err != nil || resp.StatusCode != 200 {
		tb.Fatalf("balance of %s: %d %v", address, resp.StatusCode, err)
	}
	var n int64
	fmt.Sscan(b.Balance, &n)
	return n
}

func addressOf(tb testing.TB, hexKey string) string {
	tb.Helper()
	k, err := crypto.HexToECDSA(strings.TrimPrefix(hexKey, "0x"))
	if err != nil {
		tb.Fatal(err)
	}
	return crypto.PubkeyToAddress(k.PublicKey).Hex()
}

// TestX402_stockClient runs the real `assay serve` on the x402 rail, its
// market signed (each agent with its API key), and the real `assay
// facilitator` on loopback, and pays with the protocol's
// own client (testdata/x402/pay.mjs: @x402/fetch's wrapFetchWithPayment,
// @x402/evm's ExactEvmScheme, a viem account; versions pinned by its
// package-lock.json): an unfunded purchase gets 402, the client pays, the
// purchase succeeds; a deposit is paid the same way; expired, underpaid,
// wrongly addressed, replayed and malformed payments are refused with a
// coded error. The ledger and the facilitator's balances agree, and an
// upheld challenge refunds to the buyer's address with the refund's
// reference in a signed receipt. After a restart the paid header is still
// refused as a replay. It runs `npm ci` when node_modules is absent, and
// skips when node or npm is not installed.
func TestX402_stockClient(t *testing.T) {
	t.Parallel()
	dir := x402Client(t)
	buyer, operator := addressOf(t, x402BuyerKey), addressOf(t, x402OperatorKey)
	fac := startFacilitator(t, t.TempDir(), "--fund", fmt.Sprintf("%s=%d", buyer, x402Funding))
	data := t.TempDir()
	// The signed market: every agent acts with its API key, issued before
	// the server holds the store; the payer is whoever signed the payment.
	keys := map[string]string{}
	for _, agent := range []string{"x402-seller", "x402-buyer", "x402-saver", "mcp-buyer"} {
		_, keys[agent] = issueKey(t, data, agent)
	}
	as := func(agent string) []string { return []string{"Authorization", "Bearer " + keys[agent]} }
	args := []string{"--rail", "x402", "--x402-facilitator", fac}
	env := []string{"ASSAY_OPERATOR_TOKEN=op", "ASSAY_X402_OPERATOR_KEY=" + x402OperatorKey}
	s := startServe(t, data, args, env, 30*time.Second)

	wasmBytes, err := os.ReadFile("../fixtures/checkers/squares.wasm")
	if err != nil {
		t.Fatal(err)
	}
	up := s.do(t, "POST", "/checkers", wasmBytes, "Content-Type", "application/wasm")
	if up.status != http.StatusCreated {
		t.Fatalf("upload %d %s", up.status, up.body)
	}
	sum := up.obj(t)["sha256"].(string)
	var listings []string
	for _, problem := range []string{"squares of one to three", "squares again of one to three"} {
		r := s.post(t, "/market/listings", fmt.Sprintf(`{"agent":"x402-seller","title":"squares","problem_statement":%q,"artifact":"1 1\n2 4\n3 9\n","artifact_type":"dataset","price_usd":"0.50","checker":{"sha256":%q}}`, problem, sum), as("x402-seller")...)
		if r.status != http.StatusCreated {
			t.Fatalf("publish %d %s", r.status, r.body)
		}
		listings = append(listings, r.obj(t)["listing"].(map[string]any)["listing_id"].(string))
	}
	// The dev rail's deposit is not open on x402: without a payment it is
	// asked for, as a purchase is.
	if r := s.post(t, "/market/wallets/x402-seller/deposit", `{"amount_usd":"1"}`, as("x402-seller")...); r.status != http.StatusPaymentRequired || r.code(t) != "payment_required" {
		t.Fatalf("unpaid deposit %d %s", r.status, r.body)
	}

	// Who acts is checked before what is paid: a purchase without the
	// buyer's key is refused, not asked for a payment.
	if r := s.post(t, "/market/listings/"+listings[0]+"/purchase", `{"agent":"x402-buyer"}`); r.status != http.StatusUnauthorized || r.code(t) != "signature_missing" {
		t.Fatalf("a purchase without the buyer's key: %d %s", r.status, r.body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "pay.mjs", s.base, listings[0], listings[1], x402BuyerKey, keys["x402-buyer"], keys["x402-saver"])
	node.Dir = dir
	out, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("the stock x402 client: %v\n%s\nserver:\n%s", err, out, s.log())
	}
	line := strings.TrimSpace(string(out))
	if !strings.HasPrefix(line, "ok: ") {
		t.Fatalf("the stock x402 client did not finish: %s", out)
	}
	var got struct {
		PurchaseID  string  `json:"purchase_id"`
		Payer       string  `json:"payer"`
		Transaction string  `json:"transaction"`
		TotalUSD    float64 `json:"total_usd"`
		PaidHeader  string  `json:"paid_header"`
		Refused     map[string]struct {
			Status          int    `json:"status"`
			Code            string `json:"code"`
			PaymentRequired bool   `json:"payment_required"`
		} `json:"refused"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "ok: ")), &got); err != nil {
		t.Fatal(err)
	}
	t.Logf("paid %s as %s; refused %+v", got.PurchaseID, got.Transaction, got.Refused)
	for name, want := range map[string]struct {
		status int
		code   string
		again  bool
	}{
		"expired":         {402, "payment_expired", true},
		"underpaid":       {402, "payment_underpaid", true},
		"wrong_recipient": {402, "payment_wrong_recipient", true},
		"replayed":        {409, "payment_replayed", false},
		"malformed":       {400, "invalid_payment", false},
	} {
		r := got.Refused[name]
		if r.Status != want.status || r.Code != want.code || r.PaymentRequired != want.again {
			t.Errorf("%s payment: %+v, want %d %s (PAYMENT-REQUIRED again: %v)", name, r, want.status, want.code, want.again)
		}
	}
	if got.Payer != buyer {
		t.Fatalf("payer %s, want the buyer's address %s", got.Payer, buyer)
	}

	// The ledger and the facilitator agree: the purchase and the deposit
	// moved from the buyer's address to the operator's, and into the
	// market through the rail's account, each posting with its reference.
	const total, deposit = 515_000, 750_000 // $0.50 + 3%, and $0.75: under the stock client's default cap of $1 a payment
	if b := balanceAt(t, fac, buyer); b != x402Funding-total-deposit {
		t.Fatalf("the buyer holds %d at the facilitator, want %d", b, x402Funding-total-deposit)
	}
	if b := balanceAt(t, fac, operator); b != total+deposit {
		t.Fatalf("the operator holds %d at the facilitator, want %d", b, total+deposit)
	}
	railAccount := func() (int64, []any) {
		r := s.get(t, "/accounts/rail:x402")
		a := r.obj(t)
		bal, _ := a["balances"].(map[string]any)["usd-micro"].(float64)
		entries, _ := a["entries"].([]any)
		return int64(bal), entries
	}
	bal, entries := railAccount()
	if bal != -(total + deposit) {
		t.Fatalf("the rail's account holds %d, want %d", bal, -(total + deposit))
	}
	for _, e := range entries {
		if memo, _ := e.(map[string]any)["memo"].(string); !strings.Contains(memo, "x402:0x") {
			t.Fatalf("rail posting without a facilitator reference: %v", e)
		}
	}
	if r := s.get(t, "/ledger"); r.obj(t)["balanced"] != true {
		t.Fatalf("ledger %s", r.body)
	}

	// An upheld challenge refunds to the buyer's address.
	ch := s.post(t, "/market/listings/"+listings[0]+"/challenge", `{"agent":"x402-buyer","evidence":"4"}`, as("x402-buyer")...)
	if ch.status != http.StatusCreated || ch.obj(t)["challenge"].(map[string]any)["status"] != "upheld" {
		t.Fatalf("challenge %d %s", ch.status, ch.body)
	}
	p := s.get(t, "/market/purchases/"+got.PurchaseID).obj(t)
	refundRef, _ := p["refund_ref"].(string)
	if p["status"] != "refunded" || !strings.HasPrefix(refundRef, "x402:0x") || refundRef == "x402:"+got.Transaction {
		t.Fatalf("purchase after the challenge: %v", p)
	}
	receipts := p["receipts"].([]any)
	rc := s.get(t, "/receipts/"+receipts[len(receipts)-1].(string)).obj(t)
	if sub := subjectOf(t, rc); sub["refund_ref"] != refundRef || sub["payer"] != buyer {
		t.Fatalf("the last receipt does not carry the rail refund: %v", sub)
	}
	s.verify(t, rc)
	if b := balanceAt(t, fac, buyer); b != x402Funding-deposit {
		t.Fatalf("after the refund the buyer holds %d at the facilitator, want %d", b, x402Funding-deposit)
	}
	if b := balanceAt(t, fac, operator); b != deposit {
		t.Fatalf("after the refund the operator holds %d at the facilitator, want %d", b, deposit)
	}
	if bal, _ := railAccount(); bal != -deposit {
		t.Fatalf("after the refund the rail's account holds %d, want %d", bal, -deposit)
	}
	if r := s.get(t, "/ledger"); r.obj(t)["balanced"] != true {
		t.Fatalf("ledger %s", r.body)
	}

	// A restart forgets nothing: the paid header is still a replay.
	s.stop(t)
	s = startServe(t, data, args, env, 30*time.Second)
	r := s.do(t, "POST", "/market/listings/"+listings[1]+"/purchase", []byte(`{"agent":"x402-buyer"}`),
		append([]string{"Content-Type", "application/json", "PAYMENT-SIGNATURE", got.PaidHeader}, as("x402-buyer")...)...)
	if r.status != http.StatusConflict || r.code(t) != "payment_replayed" {
		t.Fatalf("replay after a restart: %d %s", r.status, r.body)
	}
	if b := balanceAt(t, fac, buyer); b != x402Funding-deposit {
		t.Fatalf("a replay after a restart moved money: the buyer holds %d", b)
	}

	// MCP does not speak x402: an unfunded purchase is a coded tool error,
	// and a wallet funded by an x402 deposit buys from its balance.
	if _, code := call(t, connectMCP(t, s, keys["mcp-buyer"]), "purchase", map[string]any{"listing_id": listings[1], "agent": "mcp-buyer"}); code != "payment_required" {
		t.Fatalf("unfunded MCP purchase answered %q, want payment_required", code)
	}
	bought, code := call(t, connectMCP(t, s, keys["x402-saver"]), "purchase", map[string]any{"listing_id": listings[1], "agent": "x402-saver"})
	if code != "" || bought["purchase"].(map[string]any)["payment_ref"] == nil || bought["payment"] != nil {
		t.Fatalf("MCP purchase from a wallet funded over x402: %v %s", bought, code)
	}
	if w := s.get(t, "/market/wallets/x402-saver").obj(t); w["balance_usd"] != 0.235 {
		t.Fatalf("wallet after the MCP purchase: %v, want 0.235", w)
	}
}
