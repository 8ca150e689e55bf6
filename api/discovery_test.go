package api_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assayhq/assay/api"
)

// verifyCard checks an Agent Card's first signature as a client would,
// with no code of the server's: the JWS header names the key by its
// did:key, the key is the one /.well-known/assay-keys publishes under
// that did, and the payload is the RFC 8785 form of the card without its
// signatures.
func verifyCard(tb testing.TB, card map[string]any, keys []any) error {
	tb.Helper()
	sigs, _ := card["signatures"].([]any)
	if len(sigs) == 0 {
		return fmt.Errorf("no signatures")
	}
	sig := sigs[0].(map[string]any)
	hb, err := base64.RawURLEncoding.DecodeString(sig["protected"].(string))
	if err != nil {
		return err
	}
	var header struct{ Alg, Typ, Kid, Jku string }
	if err := json.Unmarshal(hb, &header); err != nil {
		return err
	}
	if header.Alg != "EdDSA" || header.Typ != "JOSE" || header.Kid == "" {
		return fmt.Errorf("protected header %s", hb)
	}
	var pub ed25519.PublicKey
	for _, k := range keys {
		k := k.(map[string]any)
		if k["did"] == header.Kid {
			pub, _ = base64.StdEncoding.DecodeString(k["public_key"].(string))
		}
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("kid %s is not a published key", header.Kid)
	}
	rest := map[string]any{}
	for k, v := range card {
		if k != "signatures" {
			rest[k] = v
		}
	}
	raw, err := json.Marshal(rest)
	if err != nil {
		return err
	}
	payload, err := jcs.Transform(raw)
	if err != nil {
		return err
	}
	s, err := base64.RawURLEncoding.DecodeString(sig["signature"].(string))
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, []byte(sig["protected"].(string)+"."+base64.RawURLEncoding.EncodeToString(payload)), s) {
		return fmt.Errorf("the signature does not verify")
	}
	return nil
}

// TestAgentCard_Signed: the Agent Card lists the services as skills, each
// naming its tools, and an A2A interface; its signature verifies with the
// court's published key, and fails once the card is changed; the JWKS
// that jku names holds the same key.
func TestAgentCard_Signed(t *testing.T) {
	m := serveMarket(t)
	card := m.ok(t, 200, "GET", api.AgentCardPath, "")
	keys := m.ok(t, 200, "GET", "/.well-known/assay-keys", "")["keys"].([]any)
	if err := verifyCard(t, card, keys); err != nil {
		t.Fatalf("the card's signature: %v\n%v", err, card)
	}
	skills := map[string]string{}
	for _, s := range card["skills"].([]any) {
		s := s.(map[string]any)
		skills[s["id"].(string)] = fmt.Sprint(s["tags"])
	}
	if !strings.Contains(skills["escrow-court"], "dispute_delivery") || !strings.Contains(skills["artifact-market"], "purchase") ||
		!strings.Contains(skills["checker-replays"], "replay_checker") {
		t.Errorf("skills %v", skills)
	}
	if _, ok := skills["judgment-matters"]; ok {
		t.Error("a server without judgment matters offers the skill")
	}
	iface := card["supportedInterfaces"].([]any)[0].(map[string]any)
	if iface["url"] != m.base+api.A2APath || iface["protocolBinding"] != "JSONRPC" || iface["protocolVersion"] != "1.0" {
		t.Errorf("interface %v", iface)
	}
	card["description"] = "a forged description"
	if err := verifyCard(t, card, keys); err == nil {
		t.Error("a changed card still verifies")
	}

	hb, _ := base64.RawURLEncoding.DecodeString(card["signatures"].([]any)[0].(map[string]any)["protected"].(string))
	var header struct{ Kid, Jku string }
	_ = json.Unmarshal(hb, &header)
	if header.Jku != m.base+api.JWKSPath {
		t.Errorf("jku %q", header.Jku)
	}
	jwks := m.ok(t, 200, "GET", api.JWKSPath, "")["keys"].([]any)
	jwk := jwks[0].(map[string]any)
	x, _ := base64.RawURLEncoding.DecodeString(jwk["x"].(string))
	pub, _ := base64.StdEncoding.DecodeString(keys[0].(map[string]any)["public_key"].(string))
	if jwk["kty"] != "OKP" || jwk["crv"] != "Ed25519" || jwk["kid"] != header.Kid || string(x) != string(pub) {
		t.Errorf("jwks %v, keys %v", jwks, keys)
	}
}

// TestMCP_ProtectedResource: the MCP endpoint's RFC 9728 metadata is at
// both well-known paths, and a 401 on the endpoint names it.
func TestMCP_ProtectedResource(t *testing.T) {
	m := serveMarket(t)
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		doc := m.ok(t, 200, "GET", p, "")
		if doc["resource"] != m.base+api.MCPPath || fmt.Sprint(doc["bearer_methods_supported"]) != "[header]" {
			t.Errorf("%s: %v", p, doc)
		}
	}
	r := m.send(t, "POST", api.MCPPath, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
		"Authorization", "Bearer assay_ak_not_a_key", "Accept", "application/json, text/event-stream")
	want := `resource_metadata="` + m.base + `/.well-known/oauth-protected-resource/mcp"`
	if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), want) {
		t.Errorf("%d %q: want 401 naming %s", r.status, r.header.Get("WWW-Authenticate"), want)
	}
}

// TestMCP_Revisions: one endpoint speaks the stateless 2026-07-28
// revision (server/discover, no session) to the Go SDK's client by
// default, and 2025-11-25 (initialize) to a client that asks for it; a
// method not offered is 404 with -32601 on 2026-07-28 and 200 before.
func TestMCP_Revisions(t *testing.T) {
	m := serveMarket(t)
	for _, v := range []string{"2026-07-28", "2025-11-25"} {
		cl := mcp.NewClient(&mcp.Implementation{Name: "revisions", Version: "test"}, nil)
		cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: m.base + api.MCPPath, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: v})
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if got := cs.InitializeResult().ProtocolVersion; got != v {
			t.Errorf("asked %s, negotiated %s", v, got)
		}
		if v == "2026-07-28" && cs.ID() != "" {
			t.Errorf("a stateless session has id %q", cs.ID())
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "marketplace_stats", Arguments: map[string]any{}})
		if err != nil || res.IsError || res.StructuredContent == nil {
			t.Errorf("%s: marketplace_stats %v %+v", v, err, res)
		}
		cs.Close()
	}
	for _, tc := range []struct {
		version string
		status  int
	}{{"2026-07-28", 404}, {"2025-11-25", 200}} {
		body := `{"jsonrpc":"2.0","id":3,"method":"resources/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + tc.version +
			`","io.modelcontextprotocol/clientCapabilities":{}}}}`
		r := m.send(t, "POST", api.MCPPath, []byte(body), "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", tc.version,
			"Mcp-Method", "resources/list")
		if r.status != tc.status || !strings.Contains(string(r.body), "-32601") {
			t.Errorf("%s resources/list: %d %s, want %d -32601", tc.version, r.status, r.body, tc.status)
		}
	}
	// tools/list is cacheable on 2026-07-28.
	body := `{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	r := m.send(t, "POST", api.MCPPath, []byte(body), "Accept", "application/json, text/event-stream", "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")
	if r.status != 200 || !strings.Contains(string(r.body), `"ttlMs":600000`) || !strings.Contains(string(r.body), `"cacheScope":"public"`) {
		t.Errorf("tools/list on 2026-07-28: %d %.300s", r.status, r.body)
	}
}

// a2a sends one A2A JSON-RPC request and answers its result or error.
func (m *marketServer) a2a(tb testing.TB, method string, params any) (map[string]any, map[string]any) {
	tb.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	r := m.send(tb, "POST", api.A2APath, b)
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &out) != nil {
		tb.Fatalf("%s: %d %s", method, r.status, r.body)
	}
	return out.Result, out.Error
}

// TestA2A_Dispute runs a dispute as an A2A task: SendMessage with the
// contract's id disputes it, and the task's artifact is the signed
// verdict receipt (refund: the deliverable fails its criteria); the same
// message again answers the same task; GetTask reads it back; a refusal
// is a rejected task with the coded error; what is not offered is an
// A2A error.
func TestA2A_Dispute(t *testing.T) {
	m := serveMarket(t)
	id := m.ok(t, 200, "POST", "/contracts", `{"buyer":"did:nanda:buyer","seller":"did:nanda:seller","price":50,`+
		`"acceptance":{"assertions":[{"path":"rows","op":"gte","value":100}]}}`)["contract_id"].(string)
	m.ok(t, 200, "POST", "/contracts/"+id+"/fund", `{}`)
	m.ok(t, 200, "POST", "/contracts/"+id+"/deliver", `{"deliverable":{"rows":5}}`)

	send := func(msgID, contract string) map[string]any {
		t.Helper()
		res, jerr := m.a2a(t, "SendMessage", map[string]any{"message": map[string]any{"messageId": msgID, "role": "ROLE_USER",
			"parts": []any{map[string]any{"data": map[string]any{"contract_id": contract, "reason": "five rows, not a hundred"}}}}})
		if jerr != nil {
			t.Fatalf("SendMessage: %v", jerr)
		}
		return res["task"].(map[string]any)
	}
	task := send("msg-1", id)
	if task["id"] != "dispute-"+id || task["status"].(map[string]any)["state"] != "TASK_STATE_COMPLETED" {
		t.Fatalf("task %v", task)
	}
	rc := task["artifacts"].([]any)[0].(map[string]any)["parts"].([]any)[0].(map[string]any)["data"].(map[string]any)
	if subj := rc["credentialSubject"].(map[string]any); subj["verdict"] != "refund" {
		t.Errorf("verdict %v", subj)
	}
	if v := m.ok(t, 200, "POST", "/verify", string(mustJSON(map[string]any{"receipt": rc}))); v["valid"] != true {
		t.Errorf("the artifact does not verify: %v", v)
	}
	if again := send("msg-1", id); fmt.Sprint(again) != fmt.Sprint(task) {
		t.Errorf("the same message again:\n%v\nfirst:\n%v", again, task)
	}
	got, jerr := m.a2a(t, "GetTask", map[string]any{"id": "dispute-" + id})
	if jerr != nil || fmt.Sprint(got["artifacts"]) != fmt.Sprint(task["artifacts"]) {
		t.Errorf("GetTask: %v %v", got, jerr)
	}
	refused := send("msg-2", id)
	st := refused["status"].(map[string]any)
	if st["state"] != "TASK_STATE_REJECTED" || !strings.Contains(fmt.Sprint(st["message"]), "invalid_state") {
		t.Errorf("a second dispute: %v", refused)
	}
	for _, tc := range []struct {
		method string
		params any
		code   float64
	}{
		{"GetTask", map[string]any{"id": "dispute-esc-nope"}, -32001},
		{"CancelTask", map[string]any{"id": "dispute-" + id}, -32004},
		{"tasks/list", map[string]any{}, -32601},
		{"SendMessage", map[string]any{"message": map[string]any{"messageId": "m", "role": "ROLE_USER", "parts": []any{map[string]any{"text": "hello"}}}}, -32602},
	} {
		if _, jerr := m.a2a(t, tc.method, tc.params); jerr == nil || jerr["code"] != tc.code {
			t.Errorf("%s: %v, want %v", tc.method, jerr, tc.code)
		}
	}
}
