package api

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
)

// This file is how agents find this server: the A2A Agent Card, the OAuth
// protected-resource metadata of the MCP endpoint, the court's keys as a
// JSON Web Key Set, and the MCP server's instructions. Each is derived
// from the route table as registered (the services this server runs and
// the rows that are tools), as /agentfacts and GET / are, so that they
// never disagree.

// The discovery documents' paths.
const (
	AgentCardPath = "/.well-known/agent-card.json"
	// protectedResourcePath is RFC 9728's well-known path; the MCP
	// endpoint's metadata is at protectedResourcePath + MCPPath.
	protectedResourcePath = "/.well-known/oauth-protected-resource"
	JWKSPath              = "/.well-known/jwks.json"
)

// skills are the services the Agent Card offers as A2A skills, and the
// route table's services each one covers.
var skills = []struct {
	id, name string
	services []string
}{
	{"escrow-court", "Escrow court", []string{svcCourt, svcReceipts}},
	{"judgment-matters", "Judgment matters", []string{svcMatters}},
	{"artifact-market", "Artifact market", []string{svcMarket}},
	{"checker-replays", "Checker replays", []string{svcCheckers, svcReplays}},
}

// serviceDesc is a service's description in the services list.
func serviceDesc(name string) string {
	for _, s := range services {
		if s.name == name {
			return s.desc
		}
	}
	return ""
}

// toolsOf are the served tools of the services named, in table order.
func (s *server) toolsOf(svcs ...string) []*route {
	var out []*route
	for _, r := range s.tools() {
		for _, svc := range svcs {
			if r.service == svc {
				out = append(out, r)
			}
		}
	}
	return out
}

// toolList is the manual's list of tools: each with its route and its
// arguments from the path.
func toolList(tools []*route) string {
	if len(tools) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n| tool | route | path arguments |\n|---|---|---|\n")
	for _, r := range tools {
		var args []string
		for _, a := range r.tool.args {
			args = append(args, "`"+a.name+"`")
		}
		fmt.Fprintf(&b, "| `%s` | `%s %s` | %s |\n", r.tool.name, r.method, r.path, strings.Join(args, ", "))
	}
	return b.String()
}

// instructions are the MCP server's instructions: what each service is
// and which tools are its, how to authenticate, and where the manual is.
func (s *server) instructions() string {
	var b strings.Builder
	b.WriteString("Assay decides whether delivered work meets agreed acceptance criteria, deterministically, and signs every decision as a receipt anyone can verify offline.\n")
	for _, sk := range skills {
		tools := s.toolsOf(sk.services...)
		if len(tools) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n%s: %s\nTools:", sk.name, serviceDesc(sk.services[0]))
		for _, r := range tools {
			b.WriteString(" " + r.tool.name)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nA tool that acts for an agent takes the credentials of the HTTP request that carries the call, as the REST routes do: " +
		"Authorization: Bearer <API key> (an operator issues one with assay principals issue-key), or an RFC 9421 signature of each request " +
		"(did:key, or a registered principal for judgment matters). Mutations take idempotency_key: a retry with the same key answers the first result. " +
		"A refusal is a tool error whose text is {\"error\": {\"code\", \"message\"}}, the REST API's codes. The manual is GET /skill.md.")
	return b.String()
}

// protocolFacts says, for /agentfacts, how agents reach this server:
// the MCP tools by service, and the A2A card and skills.
func (s *server) protocolFacts(base string) map[string]any {
	tools := map[string][]string{}
	var ids []string
	for _, sk := range skills {
		ts := s.toolsOf(sk.services...)
		if len(ts) == 0 {
			continue
		}
		ids = append(ids, sk.id)
		for _, r := range ts {
			tools[sk.id] = append(tools[sk.id], r.tool.name)
		}
	}
	return map[string]any{
		"mcp": map[string]any{"endpoint": base + MCPPath, "revisions": []string{"2026-07-28", "2025-11-25"}, "tools": tools,
			"protected_resource": base + protectedResourcePath + MCPPath},
		"a2a": map[string]any{"agent_card": base + AgentCardPath, "endpoint": base + A2APath, "protocol_version": "1.0", "skills": ids},
	}
}

// protectedResource is the OAuth protected-resource metadata (RFC 9728)
// of the MCP endpoint. The bearer tokens it takes are API keys that an
// operator issues (assay principals issue-key), not tokens of an OAuth
// authorization server, so the document names none: it says how a token
// is sent and where the manual says how to get one.
func (s *server) protectedResource(c *fiber.Ctx, _ principal.Actor) error {
	base := c.BaseURL()
	return c.JSON(fiber.Map{
		"resource":                 base + MCPPath,
		"resource_name":            "Assay MCP server",
		"bearer_methods_supported": []string{"header"},
		"resource_documentation":   base + "/skill.md#proving-who-you-are",
		"assay_token_issuance":     "bearer tokens are API keys issued to an agent id by the operator: assay principals issue-key --agent <id>; or sign each request with RFC 9421 instead",
	})
}

func protectedResourceSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"resource"}, Description: "OAuth 2.0 protected-resource metadata (RFC 9728)",
		Properties: map[string]*jsonschema.Schema{
			"resource": {Type: "string"}, "resource_name": {Type: "string"}, "resource_documentation": {Type: "string"},
			"bearer_methods_supported": {Type: "array", Items: &jsonschema.Schema{Type: "string"}}, "assay_token_issuance": {Type: "string"},
		}}
}

// jwk is an Ed25519 public key as a JSON Web Key (RFC 8037).
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Use string `json:"use"`
	Alg string `json:"alg"`
}

// jwks serves every key the court has signed with as a JSON Web Key Set,
// each named by its did:key: the keys of /.well-known/assay-keys, for
// JOSE tooling (the Agent Card's jku).
func (s *server) jwks(c *fiber.Ctx, _ principal.Actor) error {
	keys := s.cfg.Keys.Keys()
	out := make([]jwk, 0, len(keys))
	for _, k := range keys {
		j, err := jwkOf(k)
		if err != nil {
			return err
		}
		out = append(out, j)
	}
	return c.JSON(fiber.Map{"keys": out})
}

func jwkOf(k receipt.Key) (jwk, error) {
	pub, err := base64.StdEncoding.DecodeString(k.PublicKey)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return jwk{}, fmt.Errorf("api: the court's key %s is not a base64 Ed25519 public key", k.DID)
	}
	return jwk{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub), Kid: k.DID, Use: "sig", Alg: "EdDSA"}, nil
}

func jwksSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Required: []string{"keys"}, Description: "a JSON Web Key Set (RFC 7517) of the court's Ed25519 keys",
		Properties: map[string]*jsonschema.Schema{"keys": {Type: "array", Items: &jsonschema.Schema{Type: "object",
			Required: []string{"kty", "crv", "x", "kid"}}}}}
}

// agentCard serves the A2A Agent Card (A2A v1.0): the services as
// skills, the A2A and MCP endpoints, the security schemes, signed with
// the court's current key (a JWS over the card's RFC 8785 form, without
// its signatures). The card names this server by the URL it was asked
// at, so it is signed for each request; the signature is checked with the
// key the protected header's kid names, from jku or
// /.well-known/assay-keys.
func (s *server) agentCard(c *fiber.Ctx, _ principal.Actor) error {
	card, err := s.signedCard(c.BaseURL())
	if err != nil {
		return err
	}
	sum := sha256.Sum256(card)
	c.Set(fiber.HeaderCacheControl, "public, max-age=300")
	c.Set(fiber.HeaderETag, `"`+hex.EncodeToString(sum[:16])+`"`)
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Send(card)
}

// card is the Agent Card of this server reached at base, unsigned. It
// holds no empty string, list or object anywhere: the canonical form that
// @a2a-js/sdk signs and verifies leaves those out (even where the A2A
// text calls a field required), so a card without them reads the same
// to every verifier. Security requirements are left out for that reason
// (a scheme without scopes is an empty list); the schemes say what each
// credential is, and which operations take one is the manual's and the
// tools' to say.
func (s *server) card(base string) map[string]any {
	var skillList []any
	for _, sk := range skills {
		tools := s.toolsOf(sk.services...)
		if len(tools) == 0 {
			continue
		}
		var tags, examples []string
		for _, r := range tools {
			tags = append(tags, r.tool.name)
			examples = append(examples, r.tool.name+": "+r.summary)
		}
		skill := map[string]any{"id": sk.id, "name": sk.name, "description": serviceDesc(sk.services[0]),
			"tags": tags, "examples": examples, "inputModes": []string{"application/json"}, "outputModes": []string{"application/json"}}
		skillList = append(skillList, skill)
	}
	return map[string]any{
		"name": "Assay",
		"description": "Escrow and deterministic dispute resolution for agents that trade work for money: the court replays the agreed acceptance criteria in a WebAssembly sandbox and signs the verdict. " +
			"Every service is also served as MCP tools at " + base + MCPPath + " (the 2026-07-28 revision and the ones before it). " +
			"Over A2A, SendMessage with a data part {contract_id, reason} disputes a delivered contract as the buyer: the task's artifact is the signed verdict receipt.",
		"supportedInterfaces": []any{map[string]any{"url": base + A2APath, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}},
		"provider":            map[string]any{"organization": "Assay", "url": "https://github.com/assayhq/assay"},
		"version":             s.cardVersion(),
		"documentationUrl":    base + "/skill.md",
		"capabilities":        map[string]any{"streaming": false, "pushNotifications": false},
		"securitySchemes": map[string]any{
			"apiKey": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Bearer",
				"description": "an API key issued to an agent id by the operator (assay principals issue-key): Authorization: Bearer <key>"}},
			"httpSignature": map[string]any{"httpAuthSecurityScheme": map[string]any{"scheme": "Signature",
				"description": `RFC 9421 HTTP Message Signatures, Ed25519, covering ("@method" "@path" "@authority" "content-digest") with created, keyid and nonce; keyid is your did:key or a registered principal's key id`}},
		},
		"defaultInputModes":  []string{"application/json"},
		"defaultOutputModes": []string{"application/json"},
		"skills":             skillList,
	}
}

// cardVersion is the card's version: the server's, never empty (the
// field is required).
func (s *server) cardVersion() string {
	if s.cfg.Version == "" {
		return "dev"
	}
	return s.cfg.Version
}

// signedCard is the card for base with its signature: a JWS (RFC 7515)
// whose payload is the card's RFC 8785 form without signatures, and
// whose protected header names the key by its did:key (kid) and the
// key set it is in (jku).
func (s *server) signedCard(base string) ([]byte, error) {
	card := s.card(base)
	payload, err := json.Marshal(card)
	if err != nil {
		return nil, err
	}
	if payload, err = receipt.CanonicalJSON(payload); err != nil {
		return nil, err
	}
	kid := s.cfg.Keys.Current().DID
	header, err := json.Marshal(map[string]string{"alg": "EdDSA", "typ": "JOSE", "kid": kid, "jku": base + JWKSPath})
	if err != nil {
		return nil, err
	}
	protected := base64.RawURLEncoding.EncodeToString(header)
	key, sig := s.cfg.Keys.SignDocument([]byte(protected + "." + base64.RawURLEncoding.EncodeToString(payload)))
	if key.DID != kid {
		// The key rotated between the header and the signature: sign again.
		return s.signedCard(base)
	}
	card["signatures"] = []any{map[string]any{"protected": protected, "signature": base64.RawURLEncoding.EncodeToString(sig)}}
	return receipt.Marshal(card)
}

func agentCardSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: "an A2A v1.0 Agent Card, signed (signatures: JWS over its RFC 8785 form)",
		Required: []string{"name", "description", "supportedInterfaces", "version", "capabilities", "defaultInputModes", "defaultOutputModes", "skills", "signatures"},
		Properties: map[string]*jsonschema.Schema{
			"name": {Type: "string"}, "description": {Type: "string"}, "version": {Type: "string"}, "documentationUrl": {Type: "string"},
			"supportedInterfaces": {Type: "array", Items: &jsonschema.Schema{Type: "object"}}, "provider": {Type: "object"},
			"capabilities": {Type: "object"}, "securitySchemes": {Type: "object"},
			"defaultInputModes":  {Type: "array", Items: &jsonschema.Schema{Type: "string"}},
			"defaultOutputModes": {Type: "array", Items: &jsonschema.Schema{Type: "string"}},
			"skills":             {Type: "array", Items: &jsonschema.Schema{Type: "object"}},
			"signatures": {Type: "array", Items: &jsonschema.Schema{Type: "object", Required: []string{"protected", "signature"},
				Properties: map[string]*jsonschema.Schema{"protected": {Type: "string"}, "signature": {Type: "string"}}}},
		}}
}
