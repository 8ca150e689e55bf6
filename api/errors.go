package api

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
)

// statusOf maps an error's kind to its HTTP status: the one table.
var statusOf = map[fault.Kind]int{
	fault.Invalid:       http.StatusBadRequest,
	fault.Unprocessable: http.StatusUnprocessableEntity,
	fault.NotFound:      http.StatusNotFound,
	fault.Conflict:      http.StatusConflict,
	fault.Unauthorized:  http.StatusUnauthorized,
	fault.Forbidden:     http.StatusForbidden,
	fault.TooLarge:      http.StatusRequestEntityTooLarge,
	fault.TooMany:       http.StatusTooManyRequests,
	fault.Unavailable:   http.StatusServiceUnavailable,
	fault.Internal:      http.StatusInternalServerError,
}

// The error codes api/ gives itself: the request's edges and decoding, its
// own routes, and the MCP transport. The services' codes are their own
// (runtime's packages, adjudicate's E constants); the judgment routes'
// signature codes are beside their check, in matters.go.
const (
	// fiber's and the edges' refusals, before a handler runs
	codeRouteNotFound        = "route_not_found"
	codeMethodNotAllowed     = "method_not_allowed"
	codeHTTPError            = "http_error" // a status fiber raised that no code names
	codeBodyTooLarge         = "body_too_large"
	codeHeadersTooLarge      = "headers_too_large"
	codeURITooLong           = "uri_too_long"
	codeUnsupportedMediaType = "unsupported_media_type"
	codeInvalidUTF8          = "invalid_utf8"
	codeInvalidHeader        = "invalid_header"
	codeRateLimited          = "rate_limited" // 429: the caller is over its rate class's limit (limit.go)
	codeBusy                 = "busy"         // 503: the server runs its most decisions at once (limit.go)

	// a body or query that does not decode
	codeInvalidJSON  = "invalid_json"
	codeUnknownField = "unknown_field"
	codeInvalidType  = "invalid_type"
	codeInvalidLimit = "invalid_limit"

	// the routes' own
	codeInvalidFormat          = "invalid_format"
	codeInvalidDuration        = "invalid_duration"
	codeUnsupportedCheckerKind = "unsupported_checker_kind"
	codeOperatorDisabled       = "operator_disabled"
	codeUnauthorized           = "unauthorized"
	codeInternal               = "internal" // what a caller is told of any internal error
	codeNotAReceipt            = "not_a_receipt"

	// the codes of runtime packages that name none, for the route table
	codeIdemConflict    = "idempotency_conflict"
	codeIdemInvalidKey  = "invalid_idempotency_key"
	codeReceiptNotFound = "receipt_not_found"

	// the MCP transport's refusals
	codeInvalidRequest   = "invalid_request"
	codeNotAcceptable    = "not_acceptable"
	codeSessionNotFound  = "session_not_found"
	codeInvalidArguments = "invalid_arguments"
)

// errorBody is every error's shape: the seed's detail, and a code.
type errorBody struct {
	Detail string    `json:"detail"`
	Error  errorCode `json:"error"`
}

type errorCode struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// fiberCodes names the errors fiber raises before a handler runs.
var fiberCodes = map[int]fault.Error{
	http.StatusNotFound:              {Kind: fault.NotFound, Code: codeRouteNotFound, Message: "no such route; GET / lists them"},
	http.StatusRequestEntityTooLarge: {Kind: fault.TooLarge, Code: codeBodyTooLarge, Message: "request body too large"},
}

// statusError is an error of the request's edges whose status no fault
// kind has: 414, 415, 431.
type statusError struct {
	status        int
	code, message string
}

func (e *statusError) Error() string { return e.code + ": " + e.message }

// errorHandler answers every error in one shape, with the status its kind
// maps to. Internal errors are logged and not shown. A method the route
// does not take answers 405 with Allow, the methods allow names for the
// path (the route table's).
func errorHandler(log *slog.Logger, allow func(path string) string) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		// fasthttp refused the request while reading it: a body over
		// the server's limit, or a request line and headers over its read
		// buffer. The rest of the request is still on its way, and a
		// connection closed with unread bytes is reset, which loses the
		// answer: answer, then read and drop what follows.
		switch err {
		case fiber.ErrRequestEntityTooLarge:
			return answerAndDrain(c, http.StatusRequestEntityTooLarge, codeBodyTooLarge,
				fmt.Sprintf("request body too large: this server takes at most %d bytes", c.App().Config().BodyLimit))
		case fiber.ErrRequestHeaderFieldsTooLarge:
			return answerAndDrain(c, http.StatusRequestHeaderFieldsTooLarge, codeHeadersTooLarge,
				fmt.Sprintf("the request line and header fields are over %d bytes; the request target may be at most %d bytes and the header fields %d", readBufferBytes, MaxURLBytes, MaxHeaderBytes))
		}
		var se *statusError
		if errors.As(err, &se) {
			return writeError(c, se.status, se.code, se.message)
		}
		var fe *fiber.Error
		if errors.As(err, &fe) && fe.Code == http.StatusMethodNotAllowed {
			methods := allow(c.Path())
			c.Set(fiber.HeaderAllow, methods)
			if c.Method() == fiber.MethodOptions && c.Get(fiber.HeaderAccessControlRequestMethod) == "" && strings.Contains(methods, fiber.MethodOptions) {
				return c.SendStatus(fiber.StatusNoContent) // an OPTIONS that is no preflight: the methods
			}
			return writeError(c, http.StatusMethodNotAllowed, codeMethodNotAllowed,
				fmt.Sprintf("%s is not a method of %s; it takes %s", c.Method(), c.Path(), methods))
		}
		if errors.As(err, &fe) {
			if known, ok := fiberCodes[fe.Code]; ok {
				err = &known
			} else {
				return writeError(c, fe.Code, codeHTTPError, fe.Message)
			}
		}
		var later retryAfter
		if errors.As(err, &later) {
			c.Set(fiber.HeaderRetryAfter, strconv.Itoa(retrySeconds(later.RetryAfter())))
		}
		kind := fault.KindOf(err)
		status, ok := statusOf[kind]
		if !ok {
			status = http.StatusInternalServerError
		}
		if status == http.StatusInternalServerError {
			// The details are for the log, not the caller.
			log.Error("internal error", "method", c.Method(), "path", c.Path(), "err", err)
			return writeError(c, status, fault.CodeOf(err), "internal error; the server has logged it")
		}
		return writeError(c, status, fault.CodeOf(err), fault.MessageOf(err))
	}
}

// drainBytes and drainTime bound what answerAndDrain reads after its
// answer.
const (
	drainBytes = 64 << 20
	drainTime  = 5 * time.Second
)

// answerAndDrain writes the error's response on the connection itself,
// closes the connection's write side, so that the client reads the whole
// answer and then the end of the stream, and reads and drops what the
// client still sends (up to drainBytes or drainTime), so that closing the
// connection does not reset it before the client read the answer (what
// net/http's server does, in closeWriteAndWait). fasthttp then writes its
// own copy of the answer to the closed write side, which goes nowhere.
func answerAndDrain(c *fiber.Ctx, status int, code, message string) error {
	if err := writeError(c, status, code, message); err != nil {
		return err
	}
	c.Set(fiber.HeaderConnection, "close")
	conn := c.Context().Conn()
	type closeWriter interface{ CloseWrite() error }
	cw, ok := conn.(closeWriter)
	if !ok {
		return nil // not TCP: let fasthttp answer and close
	}
	if _, err := c.Response().WriteTo(conn); err != nil {
		return nil
	}
	if err := cw.CloseWrite(); err != nil {
		return nil
	}
	_ = conn.SetReadDeadline(time.Now().Add(drainTime))
	_, _ = io.CopyN(io.Discard, conn, drainBytes)
	return nil
}

func writeError(c *fiber.Ctx, status int, code, message string) error {
	return c.Status(status).JSON(errorBody{Detail: message, Error: errorCode{Code: code, Message: message}})
}
