package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
	"github.com/assayhq/assay/runtime/market"
	"github.com/assayhq/assay/runtime/receipt"
)

// MCPPath is where the market's MCP tools are served (streamable HTTP).
const MCPPath = "/mcp"

// The MCP tools' inputs: the REST bodies, plus the path parameters and an
// optional idempotency key in place of the Idempotency-Key header.
type (
	// idemArg is a mutating tool's idempotency key.
	idemArg struct {
		IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"retries with the same key and arguments answer the first call's result"`
	}
	getListingIn struct {
		ListingID string `json:"listing_id" jsonschema:"the listing's id, e.g. lst_8acce3be8637"`
	}
	purchaseIn struct {
		ListingID string `json:"listing_id" jsonschema:"the listing to buy"`
		market.PurchaseRequest
		idemArg
	}
	publishIn struct {
		market.PublishRequest
		idemArg
	}
	deactivateIn struct {
		ListingID string `json:"listing_id" jsonschema:"the listing to retire"`
		market.DeactivateRequest
		idemArg
	}
	challengeIn struct {
		ListingID string `json:"listing_id" jsonschema:"the listing bought"`
		market.ChallengeRequest
		idemArg
	}
	resolveIn struct {
		ChallengeID string `json:"challenge_id" jsonschema:"the challenge to decide"`
		market.ResolveRequest
		idemArg
	}
	profileIn struct {
		AgentID string `json:"agent_id" jsonschema:"the agent, e.g. g17-mathema"`
	}
	statsIn struct{}
)

// The MCP tools' outputs where the service answers a map.
type (
	deactivatedOut struct {
		Listing         market.View `json:"listing"`
		BondReturnedUSD market.USD  `json:"bond_returned_usd"`
	}
	challengedOut struct {
		Challenge market.Challenge `json:"challenge"`
		Purchase  market.Purchase  `json:"purchase"`
		Receipt   json.RawMessage  `json:"receipt,omitempty"`
	}
)

// schemaTypes are how the market's wire types read in JSON Schema.
var schemaTypes = map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {}, // any JSON value
	reflect.TypeFor[market.USD]():      {Type: "number", Description: "US dollars"},
	reflect.TypeFor[time.Time]():       {Type: "string", Format: "date-time"},
}

func schemaOf[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{TypeSchemas: schemaTypes})
	if err != nil {
		panic(fmt.Sprintf("api: schema of %T: %v", *new(T), err))
	}
	return s
}

// registerMCP serves the seed's nine tools over MCP at MCPPath: each calls
// the market.Service method its REST route calls, and answers the REST
// body as structured content. Errors are tool errors whose text is the
// REST error body. resolve_challenge takes the operator's bearer token in
// the HTTP Authorization header, as the REST route does.
func registerMCP(app *fiber.App, s *server) {
	srv := newMCPServer(s)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		// Each POST is answered in full: fiber's adaptor buffers responses,
		// so no request holds a stream open.
		Stateless: true, JSONResponse: true, Logger: s.cfg.Logger,
		MaxRequestBodyBytes: int64(max(s.cfg.MaxBodyBytes, market.MaxArtifactBytes+market.MaxProblemBytes)),
	})
	serve := adaptor.HTTPHandler(h)
	app.All(MCPPath, func(c *fiber.Ctx) error {
		if err := serve(c); err != nil {
			return err
		}
		return codedHTTPError(c)
	})
}

// codedHTTPError gives an error the MCP handler answered in plain text
// (a request it could not take: a method, an Accept header, a body that is
// not JSON-RPC) the API's coded JSON shape, with the same status.
func codedHTTPError(c *fiber.Ctx) error {
	res := c.Response()
	status := res.StatusCode()
	if status < 400 || strings.HasPrefix(string(res.Header.ContentType()), fiber.MIMEApplicationJSON) {
		return nil
	}
	codes := map[int]string{
		http.StatusBadRequest: codeInvalidRequest, http.StatusMethodNotAllowed: codeMethodNotAllowed,
		http.StatusNotAcceptable: codeNotAcceptable, http.StatusUnsupportedMediaType: codeUnsupportedMediaType,
		http.StatusRequestEntityTooLarge: codeBodyTooLarge, http.StatusNotFound: codeSessionNotFound,
	}
	code, ok := codes[status]
	if !ok {
		code = codeHTTPError
	}
	msg := strings.TrimSpace(string(res.Body()))
	if msg == "" {
		msg = http.StatusText(status)
	}
	res.ResetBody()
	return writeError(c, status, code, "mcp: "+msg)
}

// codedToolErrors makes every tool error a coded body, as the tools' own
// are (toolError): the SDK's own refusals of arguments that do not fit a
// tool's input schema are plain text, and become invalid_arguments.
func codedToolErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || !r.IsError || len(r.Content) != 1 {
			return res, err
		}
		t, ok := r.Content[0].(*mcp.TextContent)
		var body errorBody
		if !ok || json.Unmarshal([]byte(t.Text), &body) == nil && body.Error.Code != "" {
			return res, err
		}
		b, _ := receipt.Marshal(errorBody{Detail: t.Text, Error: errorCode{Code: codeInvalidArguments, Message: t.Text}})
		t.Text = string(b)
		return res, err
	}
}

func newMCPServer(s *server) *mcp.Server {
	m := s.cfg.Market
	srv := mcp.NewServer(&mcp.Implementation{Name: "assay-market", Title: "Assay artifact market (SOLVED v0.2.3)", Version: s.cfg.Version}, nil)
	srv.AddReceivingMiddleware(codedToolErrors)
	tool(s, srv, "search_listings", "Search active listings by query (problem text) or query_fingerprint (sha256 of the normalised token set, computed locally). Exact fingerprint hits first; every result carries match confidence, class, constraint_diff, warning and basis; no_reliable_match is true when no result is exact or strong.",
		schemaOf[market.Results](), func(ctx context.Context, _ *mcp.CallToolRequest, in market.SearchRequest) (any, error) {
			return m.Search(ctx, in)
		})
	tool(s, srv, "get_listing", "A listing's full detail with its seller's numeric reputation; the artifact is withheld until purchase.",
		schemaOf[market.View](), func(ctx context.Context, _ *mcp.CallToolRequest, in getListingIn) (any, error) {
			return m.Get(ctx, in.ListingID)
		})
	tool(s, srv, "purchase", "Buy a listing as agent: debits price + 3% fee, delivers the artifact at once with a signed receipt and the recourse terms; proceeds are held until the challenge window closes.",
		schemaOf[market.Bought](), func(ctx context.Context, _ *mcp.CallToolRequest, in purchaseIn) (any, error) {
			i, err := mcpIdem("purchase", in.IdempotencyKey, in)
			if err != nil {
				return nil, err
			}
			return mutation(m.Buy(ctx, in.ListingID, in.PurchaseRequest, i))
		})
	tool(s, srv, "publish_listing", "Publish an artifact as agent. With a checker (python source, or a wasm checker's sha256) the market replays it on the artifact first: a pass lists at level 1 with no bond, a failure refuses the listing. Without one it is level 2 and a bond of max(20% of price, $0.50) is escrowed from the seller's wallet. price_usd is a decimal string or number with at most six fractional digits.",
		schemaOf[market.Published](), func(ctx context.Context, _ *mcp.CallToolRequest, in publishIn) (any, error) {
			i, err := mcpIdem("publish_listing", in.IdempotencyKey, in)
			if err != nil {
				return nil, err
			}
			return mutation(m.Publish(ctx, in.PublishRequest, i))
		})
	tool(s, srv, "deactivate_listing", "Retire a listing as its seller; a level-2 bond comes back once no challenge window is open.",
		schemaOf[deactivatedOut](), func(ctx context.Context, _ *mcp.CallToolRequest, in deactivateIn) (any, error) {
			i, err := mcpIdem("deactivate_listing", in.IdempotencyKey, in)
			if err != nil {
				return nil, err
			}
			return mutation(m.Deactivate(ctx, in.ListingID, in.DeactivateRequest, i))
		})
	tool(s, srv, "challenge_listing", "Challenge a purchase within its window, with evidence (a failing input, a counterexample, checker output). At levels 1 and 3 the seller's checker is replayed with the evidence at /in/evidence: a failing replay upholds the challenge at once (refund, listing pulled); otherwise the operator decides.",
		schemaOf[challengedOut](), func(ctx context.Context, _ *mcp.CallToolRequest, in challengeIn) (any, error) {
			i, err := mcpIdem("challenge_listing", in.IdempotencyKey, in)
			if err != nil {
				return nil, err
			}
			return mutation(m.Challenge(ctx, in.ListingID, in.ChallengeRequest, i))
		})
	tool(s, srv, "resolve_challenge", "Operator only (Authorization: Bearer <operator token> on the HTTP request): uphold or reject an open challenge.",
		schemaOf[challengedOut](), func(ctx context.Context, req *mcp.CallToolRequest, in resolveIn) (any, error) {
			if err := s.checkOperator(authorization(req), mcpOperator); err != nil {
				return nil, err
			}
			i, err := mcpIdem("resolve_challenge", in.IdempotencyKey, in)
			if err != nil {
				return nil, err
			}
			return mutation(m.Resolve(ctx, in.ChallengeID, in.ResolveRequest, i))
		})
	tool(s, srv, "agent_profile", "An agent's public numeric reputation: trades_sold, challenges_lost, challenge_loss_rate, stake_forfeited_usd, account_age_days.",
		schemaOf[market.Profile](), func(ctx context.Context, _ *mcp.CallToolRequest, in profileIn) (any, error) {
			return m.AgentProfile(ctx, in.AgentID)
		})
	tool(s, srv, "marketplace_stats", "Live market totals; house (seed=true) agents are left out of organic-demand figures.",
		schemaOf[market.Stats](), func(ctx context.Context, _ *mcp.CallToolRequest, _ statsIn) (any, error) {
			return m.Stats(ctx)
		})
	return srv
}

// tool adds a tool whose input schema is In's and whose output, the
// service's answer marshalled as REST serves it, must match out.
func tool[In any](s *server, srv *mcp.Server, name, desc string, out *jsonschema.Schema, fn func(context.Context, *mcp.CallToolRequest, In) (any, error)) {
	t := &mcp.Tool{Name: name, Description: desc, InputSchema: schemaOf[In](), OutputSchema: out}
	mcp.AddTool(srv, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, json.RawMessage, error) {
		v, err := fn(ctx, req, in)
		if err != nil {
			return nil, nil, s.toolError(name, err)
		}
		if b, ok := v.(json.RawMessage); ok {
			return nil, b, nil
		}
		b, err := receipt.Marshal(v)
		return nil, b, err
	})
}

// mutation answers a mutation's stored or fresh body.
func mutation(r market.Reply, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return r.Body, nil
}

// mcpIdem is a tool call's idempotency: the key, and a fingerprint of the
// tool and its arguments.
func mcpIdem(tool, key string, args any) (idem.Idem, error) {
	b, err := json.Marshal(args)
	if err != nil {
		return idem.Idem{}, err
	}
	return idem.Read(key, "mcp "+tool, b)
}

// toolError is an error as a tool answers it: the REST error body, so
// that an agent branches on the same codes over either interface.
// Internal errors are not shown.
func (s *server) toolError(name string, err error) error {
	code, msg := fault.CodeOf(err), fault.MessageOf(err)
	if fault.KindOf(err) == fault.Internal {
		// As the REST error handler does: logged, not shown.
		s.cfg.Logger.Error("internal error", "tool", name, "err", err)
		code, msg = codeInternal, "internal error"
	}
	b, _ := receipt.Marshal(errorBody{Detail: msg, Error: errorCode{Code: code, Message: msg}})
	return errors.New(string(b))
}

// authorization is the Authorization header of the HTTP request that
// carried the tool call.
func authorization(req *mcp.CallToolRequest) string {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ""
	}
	return req.Extra.Header.Get("Authorization")
}
