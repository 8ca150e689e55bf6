package matters

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"time"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/ident"
)

var (
	digestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	stakesRE = regexp.MustCompile(`^(0|[1-9][0-9]{0,17})(\.[0-9]{1,6})?$`)
)

var riskClasses = map[string]bool{"spend": true, "publish": true, "irreversible": true}

func invalid(code, format string, args ...any) error {
	return fault.New(fault.Invalid, code, format, args...)
}

// text checks a required free-text field of at most max bytes: valid
// UTF-8 with no control character but tab and newline and no bidi control
// (package ident's text rules; code invalid_<field>).
func text(field, v string, max int) error {
	switch {
	case v == "":
		return invalid(ECodeMissingField, "%s is required and must not be empty", field)
	case len(v) > max:
		return invalid(ECodeFieldTooLong, "%s is %d bytes; at most %d", field, len(v), max)
	}
	return ident.Text(field, v, max)
}

// validID checks a required id (requester_id, solver_id, matter_id, key_id,
// tenant) against package ident's grammar: at most MaxIDBytes of graphic
// characters, no whitespace, control, format or bidi character, no '/',
// '\\' or '*', not "." or ".." (code invalid_<field>).
func validID(field, v string) error {
	switch {
	case v == "":
		return invalid(ECodeMissingField, "%s is required and must not be empty", field)
	case len(v) > MaxIDBytes:
		return invalid(ECodeFieldTooLong, "%s is %d bytes; at most %d", field, len(v), MaxIDBytes)
	}
	return ident.ID(field, "invalid_"+field, v)
}

func validDigest(field, d string, required bool) error {
	if d == "" {
		if required {
			return invalid(ECodeInvalidActionDigest, "%s is required: the SHA-256 (64 lowercase hex digits) of the exact external action", field)
		}
		return nil
	}
	if !digestRE.MatchString(d) {
		return invalid(ECodeInvalidActionDigest, "%s must be 64 lowercase hex digits (a SHA-256)", field)
	}
	return nil
}

func validStakes(s string) error {
	if s == "" {
		return invalid(ECodeInvalidStakes, `stakes_usdc is required: a positive decimal string like "12.5", at most %d fractional digits`, MaxStakesDecimals)
	}
	if !stakesRE.MatchString(s) || strings.Trim(s, "0.") == "" {
		return invalid(ECodeInvalidStakes, `stakes_usdc must be a positive decimal string like "12.5" with at most %d fractional digits`, MaxStakesDecimals)
	}
	return nil
}

func parseDeadline(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, invalid(ECodeInvalidDeadline, "deadline is required: an ISO-8601 (RFC 3339) time in the future, e.g. 2026-05-01T12:00:00Z")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, invalid(ECodeInvalidDeadline, "deadline must be an ISO-8601 (RFC 3339) time with a zone, e.g. 2026-05-01T12:00:00Z")
	}
	if !t.After(now) {
		return time.Time{}, invalid(ECodeInvalidDeadline, "deadline %s is not in the future", s)
	}
	return t.UTC(), nil
}

func validRiskClass(c string) error {
	if !riskClasses[c] {
		return invalid(ECodeInvalidRiskClass, `risk_class must be "spend", "publish" or "irreversible"`)
	}
	return nil
}

func validSolverKind(k string) error {
	if k != "human" && k != "model" {
		return invalid(ECodeInvalidSolverKind, `solver_kind must be "human" or "model"`)
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// compileVerdictSchema checks the seed's rules (a non-array object whose
// required is a non-empty array) and compiles the schema through
// adjudicate's bounded subset.
func compileVerdictSchema(raw json.RawMessage) (*adjudicate.Schema, error) {
	if isNull(raw) {
		return nil, invalid(ECodeInvalidSchema, "verdict_schema is required: an object whose required is a non-empty array")
	}
	if len(raw) > MaxSchemaBytes {
		return nil, invalid(ECodeInvalidSchema, "verdict_schema is %d bytes; at most %d", len(raw), MaxSchemaBytes)
	}
	if !isObject(raw) {
		return nil, invalid(ECodeInvalidSchema, "verdict_schema must be a JSON object")
	}
	var top struct {
		Required json.RawMessage `json:"required"`
	}
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, invalid(ECodeInvalidSchema, "verdict_schema: %v", err)
	}
	var req []json.RawMessage
	if isNull(top.Required) || json.Unmarshal(top.Required, &req) != nil || len(req) == 0 {
		return nil, invalid(ECodeInvalidSchema, "verdict_schema.required must be a non-empty array of property names")
	}
	sc, err := adjudicate.CompileSchema(raw)
	if err != nil {
		return nil, invalid(ECodeInvalidSchema, "verdict_schema: %s", strings.TrimPrefix(fault.MessageOf(err), "schema: "))
	}
	return sc, nil
}
