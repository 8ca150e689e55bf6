// Package api serves Assay over HTTP with fiber: the escrow court's routes,
// fields and status codes of the Lex Automata seed (court.go, receipts.go,
// checkers.go), the artifact market (market.go, mcp.go) and judgment
// matters (matters.go), the error contract (one table from fault kinds to
// statuses), usage hints on bare GETs of POST routes, and the court's own
// documentation at / and /skill.md. Every route and MCP tool is one row of
// the route table (table.go), run by one pipeline (pipeline.go) over the
// services as the small interfaces it declares (services.go); RATIONALE.md
// says why. This file holds the app's setup and what every service shares.
package api

import (
	_ "embed"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/internal/metrics"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
)

// DefaultMaxBodyBytes bounds a JSON request body.
const DefaultMaxBodyBytes = 1 << 20

// Config configures New. Keys is required, and Court unless a test
// serves only what needs no court.
type Config struct {
	// The services (services.go). Court serves the escrow court and the
	// receipts; Checkers the checker registry; Market the artifact market
	// under /market and /mcp (nil leaves it out); Matters the judgment
	// routes under /api/v1/economic/matters (nil leaves them out);
	// Replays POST /replays (nil answers checkers_unavailable). Each
	// service decides who may act on its objects, and says how it
	// authenticates (Mode), for the documents.
	Court    Court
	Checkers Checkers
	Market   Market
	Matters  Matters
	Replays  Replays
	// Identities is the server's one principal registry: the registered
	// keys, API keys and nonces that signatures and API keys are checked
	// against. A request that presents a credential with none is refused.
	Identities Identities
	// Replies looks a stored reply up before a mutation runs: the one
	// replay pre-check (idem.Keeper on the store). Nil: the services'
	// own check, in their transactions, answers a replay.
	Replies Replies
	Keys    *receipt.Keyring
	// OperatorToken is the bearer token of the operator's routes and
	// tools (operator.go): the court's resolve, the market's resolve, tick
	// and clock, MCP's resolve_challenge; empty disables them.
	OperatorToken string
	// PublicURLs are the origins (scheme://host[:port]) that signatures
	// may be made for: a signed request whose @authority is none of them
	// is refused with 401 authority_mismatch (origins.go). Loopback
	// stands for every loopback name on any port; none is Loopback alone.
	PublicURLs []string
	// JurorName and JurorModel describe the tier-1 juror at /health;
	// empty when there is none.
	JurorName, JurorModel string
	Version               string
	// MaxBodyBytes bounds JSON bodies; DefaultMaxBodyBytes when zero.
	// Checker uploads are bounded by replays.MaxCheckerBytes.
	MaxBodyBytes int
	Logger       *slog.Logger
	// InFlight, when set, counts the requests being handled, so that a
	// graceful shutdown can wait for them.
	InFlight *atomic.Int64
	// AdvanceMarketClock, when set, moves the market's test clock forward:
	// POST /market/clock (operator). Only for tests (ASSAY_TEST_CLOCK=1).
	AdvanceMarketClock func(time.Duration)
	// ReplayQueue, when set, is the job queue that POST /replays?spread=true
	// spreads a batch over, for every node sharing the store to run; nil
	// runs every batch on this node.
	ReplayQueue store.Queue
	// Metrics, when set, records every request and is served at GET
	// /metrics (observe.go).
	Metrics *metrics.Metrics
	// LogRequests logs one line per request to Logger at info (observe.go).
	LogRequests bool
	// CORSOrigins are the origins whose pages may call the public routes
	// (cors.go), comma-separated: DefaultCORSOrigins ("*") when empty,
	// "none" for no cross-origin calls.
	CORSOrigins string
	// Limits are the rows' rate limits per caller (limit.go): the zero
	// Limits limits nothing; assay serve sets DefaultRates unless --limits
	// says otherwise.
	Limits Limits
	// Log, when set, is the court's transparency log, served under /log
	// and beside every receipt (tlog.go).
	Log TransparencyLog
}

//go:embed skill.md
var skill string

type server struct {
	cfg     Config
	started time.Time
	// rows are the route table the server was made from; routes is what
	// it serves of it, as registered.
	rows   []route
	routes *table
	// origins are the authorities signatures may cover.
	origins origins
	// manual is skill.md with its route list filled in, once New has
	// registered every route.
	manual string
	// openapi is the route table as an OpenAPI 3.1 document, built on
	// its first request: deriving every row's schemas would be most of a
	// server's start-up, and many servers are never asked for it.
	openapi func() []byte
	// mcp serves the rows' MCP tools (mcp.go), built on the first request
	// to MCPPath for the same reason.
	mcp func() fiber.Handler
	// limits count every row's requests per caller (limit.go).
	limits *limiter
}

// New returns the fiber app serving the route table: the operations of
// the services cfg names.
//
// # Panics
//
// On a configuration no server can run with: a public URL that does not
// parse, a route table that names a route twice.
func New(cfg Config) *fiber.App {
	app, _ := newServer(cfg, routeTable)
	return app
}

// newServer is New over the route table rows, and the server whose routes
// the app serves.
func newServer(cfg Config, rows []route) (*fiber.App, *server) {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	o, err := parseOrigins(cfg.PublicURLs)
	if err != nil {
		panic(err.Error())
	}
	routes := newTable()
	routes.cors = !corsOff(cfg.CORSOrigins)
	app := fiber.New(fiber.Config{
		AppName:               "assay",
		BodyLimit:             max(cfg.MaxBodyBytes, replays.MaxCheckerBytes),
		ErrorHandler:          errorHandler(cfg.Logger, routes.allow),
		DisableStartupMessage: true,
		Immutable:             true,
		JSONEncoder:           receipt.Marshal,
		UnescapePath:          true,
		// Routing is exact: /contracts/{id}/FUND, /Contracts/{id}/fund
		// and /contracts/{id}/fund/ are no route of the table (404), never
		// another spelling of one.
		CaseSensitive:  true,
		StrictRouting:  true,
		ReadTimeout:    60 * time.Second,
		WriteTimeout:   60 * time.Second,
		IdleTimeout:    120 * time.Second,
		ReadBufferSize: readBufferBytes,
	})
	s := &server{cfg: cfg, started: time.Now(), rows: rows, routes: routes, origins: o, limits: newLimiter(cfg.Limits)}
	if n := cfg.InFlight; n != nil {
		app.Use(func(c *fiber.Ctx) error {
			n.Add(1)
			defer n.Add(-1)
			return c.Next()
		})
	}
	if cfg.Metrics != nil || cfg.LogRequests {
		var log *slog.Logger
		if cfg.LogRequests {
			log = cfg.Logger
		}
		app.Use(observe(log, cfg.Metrics))
	}
	app.Use(edges)
	app.Use(s.cors())
	s.register(app)
	s.manual = strings.Replace(strings.Replace(skill, "{{ROUTES}}", routeList(routes), 1), "{{TOOLS}}", toolList(s.tools()), 1)
	s.openapi = sync.OnceValue(func() []byte {
		doc, err := json.Marshal(openAPI(routes, cfg.Version, s.mattersMode()))
		if err != nil {
			panic("api: the OpenAPI document: " + err.Error())
		}
		return doc
	})
	return app, s
}

func (s *server) skill(c *fiber.Ctx, _ principal.Actor) error {
	if c.Path() == "/" && wantsHTML(c) {
		return sendConsole(c, consoleFiles, "index.html")
	}
	c.Set(fiber.HeaderContentType, "text/markdown; charset=utf-8")
	return c.SendString(strings.ReplaceAll(s.manual, "{{BASE}}", c.BaseURL()))
}

func (s *server) health(c *fiber.Ctx, _ principal.Actor) error {
	cur := s.cfg.Keys.Current()
	juror, model := s.cfg.JurorName, s.cfg.JurorModel
	if juror == "" {
		juror = "none"
	}
	return c.JSON(fiber.Map{
		"status":            "ok",
		"court_public_key":  cur.PublicKey,
		"court_did":         cur.DID,
		"keys":              "/.well-known/assay-keys",
		"receipt_suite":     receipt.Suite,
		"tier1_juror":       juror,
		"tier1_juror_model": model,
		"operator_resolve":  s.cfg.OperatorToken != "",
		"version":           s.cfg.Version,
		"uptime_seconds":    int64(time.Since(s.started).Seconds()),
		"judgment_matters":  s.mattersFacts(c.BaseURL()),
		"auth":              s.authFacts(),
	})
}

func (s *server) healthz(c *fiber.Ctx, _ principal.Actor) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

func (s *server) keys(c *fiber.Ctx, _ principal.Actor) error {
	return c.JSON(receipt.KeySet{Keys: s.cfg.Keys.Keys()})
}

// factEndpoints are the endpoints /agentfacts names, each shown when the
// route (method and path of the route table) is served.
var factEndpoints = []struct{ name, at, route string }{
	{"docs", "/skill.md", "GET /skill.md"},
	{"openapi", OpenAPIPath, "GET " + OpenAPIPath},
	{"health", "/health", "GET /health"},
	{"keys", "/.well-known/assay-keys", "GET /.well-known/assay-keys"},
	{"contracts", "/contracts", "POST /contracts"},
	{"verify", "/verify", "POST /verify"},
	{"activity", "/activity", "GET /activity"},
	{"checkers", "/checkers", "POST /checkers"},
	{"reputation", "/agents/{did}/reputation", "GET /agents/{did}/reputation"},
	{"replays", "/replays", "POST /replays"},
	{"market", "/market", "GET /market/listings"},
	{"mcp", MCPPath, "POST " + MCPPath},
	{"mcp_protected_resource", protectedResourcePath + MCPPath, "GET " + protectedResourcePath + MCPPath},
	{"agent_card", AgentCardPath, "GET " + AgentCardPath},
	{"a2a", A2APath, "POST " + A2APath},
	{"jwks", JWKSPath, "GET " + JWKSPath},
	{"judgment_matters", mattersBase, "GET " + mattersBase},
	{"console", "/console", "GET /console"},
	{"transparency_log", "/log/checkpoint", "GET /log/checkpoint"},
}

func (s *server) endpoints(base string) fiber.Map {
	m := fiber.Map{"base": base}
	for _, e := range factEndpoints {
		if s.routes.byKey[e.route] != nil {
			m[e.name] = base + e.at
		}
	}
	return m
}

func (s *server) agentFacts(c *fiber.Ctx, _ principal.Actor) error {
	base := c.BaseURL()
	cur := s.cfg.Keys.Current()
	return c.JSON(fiber.Map{
		"agent_name":  "assay-court",
		"label":       "Assay escrow court",
		"description": "Escrow and deterministic dispute resolution for agents that pay each other: the court replays the agreed acceptance criteria in a sandbox and signs the verdict.",
		"version":     s.cfg.Version,
		"provider":    fiber.Map{"name": "Assay", "url": "https://github.com/assayhq/assay"},
		"endpoints":   s.endpoints(base),
		"routes":      s.routes.list(),
		"capabilities": fiber.Map{
			"functions":      []string{"escrow", "deterministic-arbitration", "sandboxed-checkers", "signed-verdict-receipts", "receipt-verification", "beta-reputation", "bans"},
			"modalities":     []string{"application/json", "application/wasm"},
			"authentication": s.authFacts(), // auth.go; the operator's routes take its bearer token
		},
		"judgment_matters": s.mattersFacts(base),
		"agent_protocols":  s.protocolFacts(base),
		"certification": fiber.Map{
			"receipt_signature_suite":  receipt.Suite,
			"receipt_canonicalization": "RFC 8785 (JCS) over credentialSubject; Ed25519",
			"data_integrity":           receipt.CryptosuiteEdDSAJCS + " at /receipts/{id}?format=di",
			"court_public_key":         cur.PublicKey,
			"court_did":                cur.DID,
		},
	})
}
