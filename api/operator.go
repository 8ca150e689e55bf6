package api

import (
	"crypto/subtle"
	"strings"
)

// operatorScope says, in its two refusals, what an operator route or tool
// is: the message of 403 operator_disabled (no Config.OperatorToken) and
// of 401 unauthorized (no or another bearer token).
type operatorScope struct {
	disabled, unauthorized string
}

// operatorScopes are the refusals of the operator's rows, by service.
var operatorScopes = map[string]operatorScope{
	svcCourt: {
		disabled:     "operator resolution is disabled on this server: start it with ASSAY_OPERATOR_TOKEN set",
		unauthorized: "resolving a dispute takes the operator's bearer token: Authorization: Bearer <token>",
	},
	svcMarket: {
		disabled:     "operator routes are disabled on this server: start it with ASSAY_OPERATOR_TOKEN set",
		unauthorized: "this route takes the operator's bearer token: Authorization: Bearer <token>",
	},
	svcMCP: {
		disabled:     "operator tools are disabled on this server: start it with ASSAY_OPERATOR_TOKEN set",
		unauthorized: "resolve_challenge takes the operator's bearer token: Authorization: Bearer <token> on the MCP HTTP request",
	},
}

// isOperator reports whether an Authorization value is the operator's
// bearer token, compared in constant time; never with no token
// configured.
func (s *server) isOperator(authorization string) bool {
	token, ok := strings.CutPrefix(authorization, "Bearer ")
	return ok && s.cfg.OperatorToken != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.OperatorToken)) == 1
}
