// Command codegen runs two whole escrow court cases through the Go client
// that oapi-codegen generated from a running server's /openapi.json
// (package assay, which e2e/openapi_codegen_test.go generates beside this
// file in a module of its own), and prints what each step answered, one
// line a step.
//
// Usage: codegen BASE RUN, where RUN makes this run's agents new.
package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"

	"assaycodegen/assay"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: codegen BASE RUN")
		os.Exit(2)
	}
	if err := run(context.Background(), os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "codegen:", err)
		os.Exit(1)
	}
}

// answer is what every generated response has: the status and the body.
type answer interface {
	StatusCode() int
}

// want fails unless the step answered status and err is nil.
func want(step string, r answer, body []byte, err error, status int) error {
	if err != nil {
		return fmt.Errorf("%s: %w", step, err)
	}
	if r.StatusCode() != status {
		return fmt.Errorf("%s: answered %d, want %d: %s", step, r.StatusCode(), status, body)
	}
	return nil
}

func run(ctx context.Context, base, runID string) error {
	c, err := assay.NewClientWithResponses(base)
	if err != nil {
		return err
	}
	buyer, seller := "did:example:codegen-buyer-"+runID, "did:example:codegen-seller-"+runID

	health, err := c.GetHealthWithResponse(ctx)
	if err := want("health", health, health.Body, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Println("health", health.JSON200.Status, health.JSON200.ReceiptSuite)

	// A contract for at least 100 rows, created with an Idempotency-Key,
	// and created again with it: the same contract, replayed.
	acceptance := map[string]any{"assertions": []any{map[string]any{"path": "rows", "op": "gte", "value": 100}}}
	terms := assay.PostContractsJSONRequestBody{Buyer: buyer, Seller: seller, Price: 50, Acceptance: &acceptance}
	key := "codegen-" + runID
	created, err := c.PostContractsWithResponse(ctx, &assay.PostContractsParams{IdempotencyKey: &key}, terms)
	if err := want("create", created, created.Body, err, http.StatusOK); err != nil {
		return err
	}
	id := created.JSON200.ContractId
	fmt.Println("create", created.JSON200.Status)
	again, err := c.PostContractsWithResponse(ctx, &assay.PostContractsParams{IdempotencyKey: &key}, terms)
	if err := want("create again", again, again.Body, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Println("create again: the same contract", again.JSON200.ContractId == id, "replayed", again.HTTPResponse.Header.Get("Idempotent-Replayed"))

	funded, err := c.PostContractsIdFundWithResponse(ctx, id, nil, assay.PostContractsIdFundJSONRequestBody{})
	if err := want("fund", funded, funded.Body, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Println("fund", funded.JSON200.Status)
	twice, err := c.PostContractsIdFundWithResponse(ctx, id, nil, assay.PostContractsIdFundJSONRequestBody{})
	if err := want("fund again", twice, twice.Body, err, http.StatusConflict); err != nil {
		return err
	}
	fmt.Println("fund again", twice.StatusCode(), twice.JSON4XX.Error.Code)

	// Three rows delivered; the buyer disputes and the court refunds.
	var short assay.PostContractsIdDeliverJSONBody_Deliverable
	if err := short.FromPostContractsIdDeliverJSONBodyDeliverable1(map[string]any{"rows": 3}); err != nil {
		return err
	}
	delivered, err := c.PostContractsIdDeliverWithResponse(ctx, id, nil, assay.PostContractsIdDeliverJSONRequestBody{Deliverable: short})
	if err := want("deliver", delivered, delivered.Body, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Println("deliver", delivered.JSON200.Status)
	reason := "three rows, where a hundred were agreed"
	disputed, err := c.PostContractsIdDisputeWithResponse(ctx, id, nil, assay.PostContractsIdDisputeJSONRequestBody{Reason: &reason})
	if err := want("dispute", disputed, disputed.Body, err, http.StatusOK); err != nil {
		return err
	}
	verdict := disputed.JSON200.CredentialSubject
	fmt.Println("dispute", verdict["verdict"], verdict["tier"])

	got, err := c.GetContractsIdWithResponse(ctx, id)
	if err := want("get", got, got.Body, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Println("contract", got.JSON200.Status, *got.JSON200.Verdict, len(*got.JSON200.Receipts), "receipts")

	// The receipt verifies, and its key is among the court's.
	verified, err := c.PostVerifyWithBodyWithResponse(ctx, "application/json", bytes.NewReader(disputed.Body))
	if err := want("verify", verified, verified.Body, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Println("verify", verified.JSON200.Valid)
	keys, err := c.GetWellKnownAssayKeysWithResponse(ctx)
	if err := want("keys", keys, keys.Body, err, http.StatusOK); err != nil {
		return err
	}
	signer := disputed.JSON200.Proof.PublicKey
	published := false
	for _, k := range *keys.JSON200.Keys {
		published = published || k.PublicKey == signer
	}
	fmt.Println("keys: the receipt's key is published", published)

	// A second contract, delivered in full and accepted: released.
	created, err = c.PostContractsWithResponse(ctx, nil, terms)
	if err := want("create", created, created.Body, err, http.StatusOK); err != nil {
		return err
	}
	id2 := created.JSON200.ContractId
	funded, err = c.PostContractsIdFundWithResponse(ctx, id2, nil, assay.PostContractsIdFundJSONRequestBody{})
	if err := want("fund", funded, funded.Body, err, http.StatusOK); err != nil {
		return err
	}
	var full assay.PostContractsIdDeliverJSONBody_Deliverable
	if err := full.FromPostContractsIdDeliverJSONBodyDeliverable1(map[string]any{"rows": 150}); err != nil {
		return err
	}
	delivered, err = c.PostContractsIdDeliverWithResponse(ctx, id2, nil, assay.PostContractsIdDeliverJSONRequestBody{Deliverable: full})
	if err := want("deliver", delivered, delivered.Body, err, http.StatusOK); err != nil {
		return err
	}
	accepted, err := c.PostContractsIdAcceptWithResponse(ctx, id2, nil, assay.PostContractsIdAcceptJSONRequestBody{})
	if err := want("accept", accepted, accepted.Body, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Println("accept", accepted.JSON200.CredentialSubject["verdict"], accepted.JSON200.CredentialSubject["tier"])

	// The court's feed, newest first, the ledger, and an unknown contract.
	limit := 3
	feed, err := c.GetActivityWithResponse(ctx, &assay.GetActivityParams{Limit: &limit})
	if err := want("activity", feed, feed.Body, err, http.StatusOK); err != nil {
		return err
	}
	var events []string
	for _, e := range *feed.JSON200.Events {
		events = append(events, e.Event)
	}
	fmt.Println("activity", events)
	ledger, err := c.GetLedgerWithResponse(ctx)
	if err := want("ledger", ledger, ledger.Body, err, http.StatusOK); err != nil {
		return err
	}
	fmt.Println("ledger balanced", ledger.JSON200.Balanced)
	missing, err := c.GetContractsIdWithResponse(ctx, "esc-"+runID)
	if err := want("unknown", missing, missing.Body, err, http.StatusNotFound); err != nil {
		return err
	}
	fmt.Println("unknown contract", missing.StatusCode(), missing.JSON4XX.Error.Code)
	return nil
}
