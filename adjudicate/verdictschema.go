package adjudicate

import (
	"fmt"
	"strings"
)

// Schema is a compiled schema of the bounded subset, usable on its own: the
// judgment service checks verdicts against it. It is the same subset, with
// the same bounds, as the criteria's schema.
type Schema struct {
	s *schema
}

// CompileSchema compiles one JSON schema of the bounded subset.
//
// # Errors
//
// An *Error with EInvalidSchema when b is not a JSON object, uses a keyword
// outside the subset or exceeds a bound.
func CompileSchema(b []byte) (*Schema, error) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, errorf(EInvalidSchema, "schema: "+err.Error(), err)
	}
	s, _, err := compileSchema(v)
	if err != nil {
		return nil, err
	}
	return &Schema{s: s}, nil
}

// Validate checks the JSON value b against the schema, within a decision's
// budget (DefaultBudget). It returns nil when b conforms, and otherwise an
// error listing the first violations, or saying that the budget ran out.
func (s *Schema) Validate(b []byte) error {
	v, err := decodeJSON(b)
	if err != nil {
		return fmt.Errorf("not a JSON value: %w", err)
	}
	var vs violations
	m := newMeter(DefaultBudget)
	s.s.validate(v, &vs, m)
	if m.exhausted {
		return fmt.Errorf("%s", m.exhaustedDetail())
	}
	if vs.n > 0 {
		return fmt.Errorf("%s", strings.TrimSpace(vs.String()))
	}
	return nil
}
