// Package api serves Assay's escrow court over HTTP with fiber: the routes,
// fields and status codes of the Lex Automata seed, the error contract (one
// table from fault kinds to statuses), usage hints on bare GETs of POST
// routes, and the court's own documentation at / and /skill.md.
package api

import (
	"bytes"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/escrow"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/runtime/replays"
	"github.com/assayhq/assay/runtime/store"
)

// DefaultMaxBodyBytes bounds a JSON request body.
const DefaultMaxBodyBytes = 1 << 20

// Config configures New. Court and Keys are required.
type Config struct {
	Court *escrow.Service
	Keys  *receipt.Keyring
	// OperatorToken is the bearer token of POST /contracts/{id}/resolve;
	// empty disables the route.
	OperatorToken string
	// JurorName and JurorModel describe the tier-1 juror at /health;
	// empty when there is none.
	JurorName, JurorModel string
	Version               string
	// MaxBodyBytes bounds JSON bodies; DefaultMaxBodyBytes when zero.
	// Checker uploads are bounded by escrow.MaxCheckerBytes.
	MaxBodyBytes int
	Logger       *slog.Logger
	// InFlight, when set, counts the requests being handled, so that a
	// graceful shutdown can wait for them.
	InFlight *atomic.Int64
	// Matters serves the judgment routes under /api/v1/economic/matters;
	// nil leaves them out. MattersAuth is how they authenticate
	// (MattersSigned when empty).
	Matters     *matters.Service
	MattersAuth MattersAuth
	// Market serves the artifact market under /market; nil leaves it out.
	Market *market.Service
	// AdvanceMarketClock, when set, moves the market's test clock forward:
	// POST /market/clock (operator). Only for tests (ASSAY_TEST_CLOCK=1).
	AdvanceMarketClock func(time.Duration)
	// ReplayQueue, when set, is the job queue that POST /replays?spread=true
	// spreads a batch over, for every node sharing the store to run; nil
	// runs every batch on this node.
	ReplayQueue store.Queue
	// Replays runs POST /replays on this node: the server's one runner
	// (runtime/replays.NewService). Nil answers checkers_unavailable.
	Replays *replays.Service
}

//go:embed skill.md
var skill string

type server struct {
	cfg     Config
	started time.Time
}

// New returns the fiber app serving the court.
func New(cfg Config) *fiber.App {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	app := fiber.New(fiber.Config{
		AppName:               "assay",
		BodyLimit:             max(cfg.MaxBodyBytes, escrow.MaxCheckerBytes),
		ErrorHandler:          errorHandler(cfg.Logger),
		DisableStartupMessage: true,
		Immutable:             true,
		JSONEncoder:           marshal,
		UnescapePath:          true,
		ReadTimeout:           60 * time.Second,
		WriteTimeout:          60 * time.Second,
		IdleTimeout:           120 * time.Second,
		ReadBufferSize:        readBufferBytes,
	})
	s := &server{cfg: cfg, started: time.Now()}
	if n := cfg.InFlight; n != nil {
		app.Use(func(c *fiber.Ctx) error {
			n.Add(1)
			defer n.Add(-1)
			return c.Next()
		})
	}

	app.Use(edges)

	app.Get("/", s.skill)
	app.Get("/skill.md", s.skill)
	app.Get("/health", s.health)
	app.Get("/healthz", s.healthz)
	app.Get("/agentfacts", s.agentFacts)
	app.Get("/.well-known/agent-facts", s.agentFacts)
	app.Get("/.well-known/assay-keys", s.keys)
	app.Get("/activity", s.activity)

	app.Post("/contracts", s.create)
	app.Get("/contracts/:id", s.contract)
	app.Post("/contracts/:id/fund", s.fund)
	app.Post("/contracts/:id/deliver", s.deliver)
	app.Post("/contracts/:id/accept", s.accept)
	app.Post("/contracts/:id/dispute", s.dispute)
	app.Post("/contracts/:id/resolve", s.resolve)

	app.Get("/agents/:did/receipts", s.agentReceipts)
	app.Get("/agents/:did/reputation", s.reputation)
	app.Get("/receipts/:id", s.receipt)
	app.Post("/verify", s.verify)

	app.Post("/checkers", s.putChecker)
	app.Get("/checkers/:sha256", s.checker)
	app.Post("/replays", s.replays)
	app.Get("/accounts/:id", s.account)
	app.Get("/ledger", s.ledger)

	s.mattersRoutes(app)
	registerMarket(app, s)
	for path, h := range hints {
		app.Get(path, hint(h))
	}
	return app
}

// marshal is json.Marshal without HTML escaping, so that a stored receipt
// is served in the very bytes that were signed.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func (s *server) skill(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "text/markdown; charset=utf-8")
	return c.SendString(strings.ReplaceAll(skill, "{{BASE}}", c.BaseURL()))
}

func (s *server) health(c *fiber.Ctx) error {
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
	})
}

func (s *server) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

func (s *server) keys(c *fiber.Ctx) error {
	return c.JSON(receipt.KeySet{Keys: s.cfg.Keys.Keys()})
}

func (s *server) agentFacts(c *fiber.Ctx) error {
	base := c.BaseURL()
	cur := s.cfg.Keys.Current()
	return c.JSON(fiber.Map{
		"agent_name":  "assay-court",
		"label":       "Assay escrow court",
		"description": "Escrow and deterministic dispute resolution for agents that pay each other: the court replays the agreed acceptance criteria in a sandbox and signs the verdict.",
		"version":     s.cfg.Version,
		"provider":    fiber.Map{"name": "Assay", "url": "https://github.com/assayhq/assay"},
		"endpoints": fiber.Map{
			"base":       base,
			"docs":       base + "/skill.md",
			"health":     base + "/health",
			"keys":       base + "/.well-known/assay-keys",
			"contracts":  base + "/contracts",
			"verify":     base + "/verify",
			"activity":   base + "/activity",
			"checkers":   base + "/checkers",
			"reputation": base + "/agents/{did}/reputation",
		},
		"capabilities": fiber.Map{
			"functions":      []string{"escrow", "deterministic-arbitration", "sandboxed-checkers", "signed-verdict-receipts", "receipt-verification", "beta-reputation", "bans"},
			"modalities":     []string{"application/json", "application/wasm"},
			"authentication": "none (operator resolution of escalated disputes takes a bearer token)",
		},
		"judgment_matters": s.mattersFacts(base),
		"certification": fiber.Map{
			"receipt_signature_suite":  receipt.Suite,
			"receipt_canonicalization": "RFC 8785 (JCS) over credentialSubject; Ed25519",
			"data_integrity":           receipt.CryptosuiteEdDSAJCS + " at /receipts/{id}?format=di",
			"court_public_key":         cur.PublicKey,
			"court_did":                cur.DID,
		},
	})
}

func (s *server) activity(c *fiber.Ctx) error {
	limit, err := queryLimit(c, 50)
	if err != nil {
		return err
	}
	a, err := s.cfg.Court.Activity(c.UserContext(), limit)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"count": a.Count, "total_seq": a.TotalSeq, "events": a.Events,
		"court_public_key": s.cfg.Keys.Current().PublicKey})
}

func queryLimit(c *fiber.Ctx, def int) (int, error) {
	q := c.Query("limit")
	if q == "" {
		return def, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 {
		return 0, fault.New(fault.Invalid, "invalid_limit", "limit must be a positive integer")
	}
	return n, nil
}

const (
	createFields  = "buyer, seller, price, currency, acceptance, deadline_tick, deliver_by, review_window"
	deliverFields = "deliverable, evidence"
	disputeFields = "reason"
	resolveFields = "verdict, reason"
	emptyFields   = "no fields: send {}"
)

func (s *server) create(c *fiber.Ctx) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req escrow.CreateRequest
	if err := decode(b, &req, createFields); err != nil {
		return err
	}
	id, err := idem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.Create(c.UserContext(), req, id)
	return reply(c, r, err)
}

func (s *server) contract(c *fiber.Ctx) error {
	ct, err := s.cfg.Court.Get(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(ct)
}

// empty handles a POST whose body must be {} (fund, accept).
func (s *server) empty(c *fiber.Ctx, do func(id string, idem escrow.Idem) (escrow.Reply, error)) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req struct{}
	if err := decode(b, &req, emptyFields); err != nil {
		return err
	}
	id, err := idem(c, b)
	if err != nil {
		return err
	}
	r, err := do(c.Params("id"), id)
	return reply(c, r, err)
}

func (s *server) fund(c *fiber.Ctx) error {
	return s.empty(c, func(id string, idem escrow.Idem) (escrow.Reply, error) {
		return s.cfg.Court.Fund(c.UserContext(), id, idem)
	})
}

func (s *server) accept(c *fiber.Ctx) error {
	return s.empty(c, func(id string, idem escrow.Idem) (escrow.Reply, error) {
		return s.cfg.Court.Accept(c.UserContext(), id, idem)
	})
}

func (s *server) deliver(c *fiber.Ctx) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req escrow.DeliverRequest
	if err := decode(b, &req, deliverFields); err != nil {
		return err
	}
	id, err := idem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.Deliver(c.UserContext(), c.Params("id"), req, id)
	return reply(c, r, err)
}

func (s *server) dispute(c *fiber.Ctx) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req escrow.DisputeRequest
	if err := decode(b, &req, disputeFields); err != nil {
		return err
	}
	id, err := idem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.Dispute(c.UserContext(), c.Params("id"), req, id)
	return reply(c, r, err)
}

func (s *server) resolve(c *fiber.Ctx) error {
	if s.cfg.OperatorToken == "" {
		return fault.New(fault.Forbidden, "operator_disabled", "operator resolution is disabled on this server: start it with ASSAY_OPERATOR_TOKEN set")
	}
	auth := c.Get(fiber.HeaderAuthorization)
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.OperatorToken)) != 1 {
		c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="assay-operator"`)
		return fault.New(fault.Unauthorized, "unauthorized", "resolving a dispute takes the operator's bearer token: Authorization: Bearer <token>")
	}
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	var req escrow.ResolveRequest
	if err := decode(b, &req, resolveFields); err != nil {
		return err
	}
	id, err := idem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.Resolve(c.UserContext(), c.Params("id"), req, id)
	return reply(c, r, err)
}

func (s *server) agentReceipts(c *fiber.Ctx) error {
	limit, err := queryLimit(c, 100)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.AgentReceipts(c.UserContext(), c.Params("did"), limit)
	if err != nil {
		return err
	}
	return c.JSON(r)
}

func (s *server) reputation(c *fiber.Ctx) error {
	r, err := s.cfg.Court.Reputation(c.UserContext(), c.Params("did"))
	if err != nil {
		return err
	}
	return c.JSON(r)
}

func (s *server) receipt(c *fiber.Ctx) error {
	r, err := s.cfg.Court.Receipt(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	switch c.Query("format") {
	case "":
		return c.JSON(r)
	case "di":
		b, err := s.cfg.Keys.Credential(r)
		if err != nil {
			return err
		}
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(b)
	}
	return fault.New(fault.Invalid, "invalid_format", `format must be absent (the receipt) or "di" (its W3C Data Integrity form)`)
}

func (s *server) verify(c *fiber.Ctx) error {
	b, err := body(c, s.cfg.MaxBodyBytes)
	if err != nil {
		return err
	}
	if t := bytes.TrimSpace(b); !json.Valid(b) || len(t) == 0 || t[0] != '{' {
		return fault.New(fault.Invalid, "invalid_json", `the body must be a receipt as a JSON object, bare or as {"receipt": …}`)
	}
	return c.JSON(s.cfg.Keys.Verifier().Verify(b))
}

func (s *server) putChecker(c *fiber.Ctx) error {
	b, err := body(c, escrow.MaxCheckerBytes)
	if err != nil {
		return err
	}
	ct, _, _ := strings.Cut(c.Get(fiber.HeaderContentType), ";")
	var kind string
	switch strings.TrimSpace(strings.ToLower(ct)) {
	case "application/wasm":
		kind = escrow.CheckerWasm
	case "text/x-python":
		kind = escrow.CheckerPython
	default:
		return fault.New(fault.Invalid, "unsupported_checker_kind", "send the checker's bytes with Content-Type: application/wasm, or Python source with text/x-python, not %q", ct)
	}
	id, err := idem(c, b)
	if err != nil {
		return err
	}
	r, err := s.cfg.Court.PutChecker(c.UserContext(), kind, b, id)
	return reply(c, r, err)
}

func (s *server) checker(c *fiber.Ctx) error {
	info, err := s.cfg.Court.Checker(c.UserContext(), c.Params("sha256"))
	if err != nil {
		return err
	}
	return c.JSON(info)
}

func (s *server) account(c *fiber.Ctx) error {
	a, err := s.cfg.Court.Account(c.UserContext(), c.Params("id"))
	if err != nil {
		return err
	}
	return c.JSON(a)
}

func (s *server) ledger(c *fiber.Ctx) error {
	a, err := s.cfg.Court.Audit(c.UserContext())
	if err != nil {
		return err
	}
	return c.JSON(a)
}
