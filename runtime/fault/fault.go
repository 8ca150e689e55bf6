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

// New returns an Error of kind with code and a formatted message.
func New(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error of kind with code whose message is err's.
func Wrap(kind Kind, code string, err error) *Error {
	return &Error{Kind: kind, Code: code, Message: err.Error(), Err: err}
}

// KindOf returns the kind of err: its Error's, or Internal for any other
// error, and "" for nil.
func KindOf(err error) Kind {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Kind
	}
	return Internal
}

// CodeOf returns the code of err: its Error's, or "internal" for any other
// error, and "" for nil.
func CodeOf(err error) string {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	}
	return "internal"
}

// MessageOf returns what a caller may be told about err. An error that is
// not an Error is a bug or a broken host, whose details stay in the log.
func MessageOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}
