package api

import (
	"crypto/subtle"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
)

// operatorScope says, in its two refusals, what an operator route or tool
// is: the message of 403 operator_disabled (no Config.OperatorToken) and
// of 401 unauthorized (no or another bearer token).
type operatorScope struct {
	disabled, unauthorized string
}

// The operator's routes and tools.
var (
	courtOperator = operatorScope{
		disabled:     "operator resolution is disabled on this server: start it with ASSAY_OPERATOR_TOKEN set",
		unauthorized: "resolving a dispute takes the operator's bearer token: Authorization: Bearer <token>",
	}
	marketOperator = operatorScope{
		disabled:     "operator routes are disabled on this server: start it with ASSAY_OPERATOR_TOKEN set",
		unauthorized: "this route takes the operator's bearer token: Authorization: Bearer <token>",
	}
	mcpOperator = operatorScope{
		disabled:     "operator tools are disabled on this server: start it with ASSAY_OPERATOR_TOKEN set",
		unauthorized: "resolve_challenge takes the operator's bearer token: Authorization: Bearer <token> on the MCP HTTP request",
	}
)

// operator is the middleware of the operator's routes: it passes a request
// whose Authorization is the operator's bearer token, and refuses any
// other with checkOperator's error and a WWW-Authenticate challenge.
func (s *server) operator(scope operatorScope) fiber.Handler {
	return func(c *fiber.Ctx) error {
		if err := s.checkOperator(c.Get(fiber.HeaderAuthorization), scope); err != nil {
			if fault.KindOf(err) == fault.Unauthorized {
				c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="assay-operator"`)
			}
			return err
		}
		return c.Next()
	}
}

// checkOperator is the one check of the operator's bearer token, for the
// routes and the MCP tools alike: an Authorization value of "Bearer " and
// Config.OperatorToken, compared in constant time. With no token
// configured, the operator's routes are off.
func (s *server) checkOperator(authorization string, scope operatorScope) error {
	if s.cfg.OperatorToken == "" {
		return fault.New(fault.Forbidden, codeOperatorDisabled, "%s", scope.disabled)
	}
	token, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.OperatorToken)) != 1 {
		return fault.New(fault.Unauthorized, codeUnauthorized, "%s", scope.unauthorized)
	}
	return nil
}
