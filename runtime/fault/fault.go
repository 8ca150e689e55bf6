// Package fault is the error contract shared by Assay's services: every
// error a caller may act on carries a kind (what went wrong, which the API
// maps to an HTTP status in one table) and a code (which of the seeds'
// error codes it is, e.g. "idempotency_conflict" or "matter_not_open").
package fault

import (
	"errors"
	"fmt"
)

// Kind classifies an error for callers and transports.
type Kind string

// The kinds. An error of no kind is Internal.
const (
	Invalid       Kind = "invalid"       // bad input; 400
	Unprocessable Kind = "unprocessable" // well formed, but fails a schema; 422
	NotFound      Kind = "not_found"     // unknown id; 404
	Conflict      Kind = "conflict"      // wrong state, idempotency conflict; 409
	Unauthorized  Kind = "unauthorized"  // missing or bad credentials; 401
	Forbidden     Kind = "forbidden"     // authenticated but not allowed; 403
	TooLarge      Kind = "too_large"     // over a size limit; 413
	TooMany       Kind = "too_many"      // over a rate limit or a quota; 429
	Unavailable   Kind = "unavailable"   // a dependency is down; 503
	Internal      Kind = "internal"      // a bug or a broken host; 500
)

// Error is a domain error: a kind, a code from the service's contract, and
// a message for people. Messages are lowercase and say what to fix.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Err     error // the cause, if any; not shown to callers
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Fault returns e's kind, code and message: an *Error is Coded too.
func (e *Error) Fault() (kind, code, message string) {
	return string(e.Kind), e.Code, e.Message
}

// Coded is the method set by which an error of a package that may not
// import fault is read as an *Error. The packages below runtime
// (adjudicate) implement it, so that their errors reach a transport with
// their codes and no service translates them by hand.
type Coded interface {
	error
	// Fault returns the error's kind (one of the Kind values), its code
	// and its message for callers.
	Fault() (kind, code, message string)
}

// As returns the first error in err's chain that is Coded, as an *Error
// (itself, when it is one; otherwise an *Error of its kind, code and
// message whose cause it is), and false when there is none.
func As(err error) (*Error, bool) {
	var c Coded
	if !errors.As(err, &c) {
		return nil, false
	}
	if e, ok := c.(*Error); ok {
		return e, true
	}
	kind, code, message := c.Fault()
	return &Error{Kind: Kind(kind), Code: code, Message: message, Err: c}, true
}

// New returns an Error of kind with code and a formatted message.
func New(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error of kind with code whose message is err's.
func Wrap(kind Kind, code string, err error) *Error {
	return &Error{Kind: kind, Code: code, Message: err.Error(), Err: err}
}

// Within returns err with where before its message ("acceptance: …"),
// of the same kind and code, with err as its cause: how a service says
// which part of its request a lower layer's error is about. An error that
// is not Coded is returned as it is.
func Within(where string, err error) error {
	e, ok := As(err)
	if !ok {
		return err
	}
	return &Error{Kind: e.Kind, Code: e.Code, Message: where + ": " + e.Message, Err: err}
}

// KindOf returns the kind of err: its Error's (or Coded error's), or
// Internal for any other error, and "" for nil.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	if e, ok := As(err); ok {
		return e.Kind
	}
	return Internal
}

// CodeOf returns the code of err: its Error's (or Coded error's), or
// "internal" for any other error, and "" for nil.
func CodeOf(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := As(err); ok {
		return e.Code
	}
	return "internal"
}

// MessageOf returns what a caller may be told about err. An error that is
// not an Error is a bug or a broken host, whose details stay in the log.
func MessageOf(err error) string {
	if e, ok := As(err); ok {
		return e.Message
	}
	return "internal error"
}
