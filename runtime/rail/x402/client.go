package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client speaks to a facilitator: POST /verify, POST /settle, GET
// /supported; and, on Assay's own local facilitator only, POST /fund and
// GET /balances/<address>, which a hosted facilitator does not have.
type Client struct {
	// URL is the facilitator's base URL, e.g. http://127.0.0.1:4020.
	URL string
	// HTTP is the client; one with a 30 s timeout when nil.
	HTTP *http.Client
}

// maxAnswerBytes bounds what Client reads of a facilitator's answer.
const maxAnswerBytes = 1 << 20

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.URL, "/")+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("facilitator %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return fmt.Errorf("facilitator %s: %w", path, err)
	}
	// /verify and /settle answer a refusal as a body with a 4xx status;
	// that body is the answer. Anything else that is not 2xx is an error.
	if err := json.Unmarshal(b, out); err != nil || resp.StatusCode >= 500 || (resp.StatusCode >= 300 && path != "/verify" && path != "/settle") {
		return fmt.Errorf("facilitator %s answered %d: %.200s", path, resp.StatusCode, b)
	}
	return nil
}

// Verify asks the facilitator whether a payment would settle.
func (c *Client) Verify(ctx context.Context, r FacilitatorRequest) (Verification, error) {
	var v Verification
	r.X402Version = Version
	err := c.do(ctx, http.MethodPost, "/verify", r, &v)
	return v, err
}

// Settle asks the facilitator to execute a payment.
func (c *Client) Settle(ctx context.Context, r FacilitatorRequest) (Settlement, error) {
	var s Settlement
	r.X402Version = Version
	err := c.do(ctx, http.MethodPost, "/settle", r, &s)
	return s, err
}

// Supported asks what the facilitator settles.
func (c *Client) Supported(ctx context.Context) (Supported, error) {
	var s Supported
	err := c.do(ctx, http.MethodGet, "/supported", nil, &s)
	return s, err
}

// Balance is an address's simulated balance on the local facilitator, in
// the asset's units.
type Balance struct {
	Address string `json:"address"`
	Balance string `json:"balance"`
}

// Fund mints amount units to address on the local facilitator.
func (c *Client) Fund(ctx context.Context, address string, amount int64) (Balance, error) {
	var b Balance
	err := c.do(ctx, http.MethodPost, "/fund", map[string]any{"address": address, "amount": fmt.Sprint(amount)}, &b)
	return b, err
}

// BalanceOf reads an address's balance on the local facilitator.
func (c *Client) BalanceOf(ctx context.Context, address string) (Balance, error) {
	var b Balance
	err := c.do(ctx, http.MethodGet, "/balances/"+address, nil, &b)
	return b, err
}
