package adjudicate

import "errors"

// Error codes. They are part of the API: an *Error is read as a
// fault.Error of kind invalid (Error.Fault), which api/ maps to 400, and
// clients branch on the codes.
const (
	// EInvalidSchema: the criteria's schema is not in the bounded subset,
	// uses a keyword the subset does not implement, or exceeds a bound.
	EInvalidSchema = "invalid_schema"
	// EInvalidAssertion: an assertion has an unknown op, a bad path, a bad
	// value, an expression that does not compile or a regex that does not.
	EInvalidAssertion = "invalid_assertion"
	// EInvalidCriteria: the criteria object itself is malformed: not JSON,
	// an unknown field, a bad checker entry, or over a size bound.
	EInvalidCriteria = "invalid_criteria"
	// EInvalidDeliverable: the deliverable is not a JSON value within the
	// bounds.
	EInvalidDeliverable = "invalid_deliverable"
	// EInternal: anything else.
	EInternal = "internal"
)

// Error is a coded error: Code is one of the E constants, Message names the
// offending part of the input (e.g. `assertions[2].op: unknown op "between"`).
type Error struct {
	Code    string
	Message string
	Err     error // the underlying error, if any
}

func (e *Error) Error() string {
	return e.Code + ": " + e.Message
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Fault returns e's kind, code and message in the services' error contract:
// it makes e a runtime/fault Coded error, which fault reads as a
// fault.Error (adjudicate sits below runtime and may not import fault).
// Every code is bad input, kind "invalid" (400), but EInternal, kind
// "internal".
func (e *Error) Fault() (kind, code, message string) {
	if e.Code == EInternal {
		return "internal", e.Code, e.Message
	}
	return "invalid", e.Code, e.Message
}

// ErrorCode returns the code of err: "" for nil, the Code of an *Error in
// its chain, and EInternal for anything else.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EInternal
}

func errorf(code, msg string, err error) *Error {
	return &Error{Code: code, Message: msg, Err: err}
}
