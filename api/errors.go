package api

import (
	"errors"
	"log/slog"
	"net/http"

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
	fault.Unavailable:   http.StatusServiceUnavailable,
	fault.Internal:      http.StatusInternalServerError,
}

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
	http.StatusNotFound:              {Kind: fault.NotFound, Code: "route_not_found", Message: "no such route; GET / lists them"},
	http.StatusMethodNotAllowed:      {Kind: fault.Invalid, Code: "method_not_allowed", Message: "method not allowed on this route"},
	http.StatusRequestEntityTooLarge: {Kind: fault.TooLarge, Code: "body_too_large", Message: "request body too large"},
}

// errorHandler answers every error in one shape, with the status its kind
// maps to. Internal errors are logged and not shown.
func errorHandler(log *slog.Logger) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		var fe *fiber.Error
		if errors.As(err, &fe) {
			if known, ok := fiberCodes[fe.Code]; ok {
				err = &known
			} else {
				return writeError(c, fe.Code, "http_error", fe.Message)
			}
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

func writeError(c *fiber.Ctx, status int, code, message string) error {
	return c.Status(status).JSON(errorBody{Detail: message, Error: errorCode{Code: code, Message: message}})
}
