package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/idem"
)

// The request's edges: what every request must be before a handler reads
// it (the edges middleware), beyond the bounds of each route's body.
const (
	// MaxURLBytes bounds the request target (path and query): 414 beyond.
	MaxURLBytes = 8 << 10
	// MaxHeaderBytes bounds the request's header fields, names and values
	// together: 431 beyond.
	MaxHeaderBytes = 4 << 10
	// readBufferBytes is fasthttp's per-connection read buffer, which
	// bounds the request line and headers together: large enough that a
	// request over MaxURLBytes or MaxHeaderBytes is read whole and answered
	// by the edges middleware, on a connection that stays in sync.
	readBufferBytes = 32 << 10
)

// idHeaders are the header fields whose values the API reads as ids or
// keys: they must be valid UTF-8 with no control characters.
var idHeaders = []string{"Idempotency-Key", "Signature-Input", "Signature", "Content-Digest", fiber.HeaderAuthorization, "Mcp-Session-Id"}

// rawBodyRoutes are the routes whose bodies are not JSON; every other body
// is JSON text.
var rawBodyRoutes = map[string]bool{"/checkers": true}

// edges refuses, before any handler runs, a request line or headers over
// their bounds (414, 431), ids in the path, query or id headers that are
// not valid UTF-8 or hold control characters (400 invalid_utf8 or
// invalid_header), and a non-empty body on a JSON route that is not sent
// as JSON (415 unsupported_media_type) or is not valid UTF-8 (400
// invalid_utf8: encoding/json would silently turn invalid bytes into
// U+FFFD, so they are refused here, never replaced). A body-less request
// reads as {} whatever its Content-Type says, as the seed's clients send
// `-d '{}'` or nothing at all.
func edges(c *fiber.Ctx) error {
	req := c.Request()
	if n := len(req.Header.RequestURI()); n > MaxURLBytes {
		return &statusError{status: fiber.StatusRequestURITooLong, code: codeURITooLong,
			message: fmt.Sprintf("the request target is %d bytes; at most %d", n, MaxURLBytes)}
	}
	n := 0
	req.Header.VisitAll(func(k, v []byte) { n += len(k) + len(v) + 4 })
	if n > MaxHeaderBytes {
		return &statusError{status: fiber.StatusRequestHeaderFieldsTooLarge, code: codeHeadersTooLarge,
			message: fmt.Sprintf("the request's header fields are %d bytes; at most %d", n, MaxHeaderBytes)}
	}
	if !utf8.ValidString(c.Path()) {
		return fault.New(fault.Invalid, codeInvalidUTF8, "the path is not valid UTF-8 once percent-decoded; ids are UTF-8 text")
	}
	var bad []byte
	req.URI().QueryArgs().VisitAll(func(k, v []byte) {
		if bad == nil && (!utf8.Valid(k) || !utf8.Valid(v)) {
			bad = k
		}
	})
	if bad != nil {
		return fault.New(fault.Invalid, codeInvalidUTF8, "the query parameter %q is not valid UTF-8 once percent-decoded", strings.ToValidUTF8(string(bad), "?"))
	}
	for _, h := range idHeaders {
		v := req.Header.Peek(h)
		if !utf8.Valid(v) {
			return fault.New(fault.Invalid, codeInvalidUTF8, "the %s header is not valid UTF-8", h)
		}
		if bytes.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			return fault.New(fault.Invalid, codeInvalidHeader, "the %s header holds a control character", h)
		}
	}
	b := req.Body()
	if len(b) == 0 || rawBodyRoutes[c.Path()] {
		return c.Next()
	}
	if err := jsonType(string(req.Header.ContentType())); err != nil {
		return err
	}
	if !utf8.Valid(b) {
		return fault.New(fault.Invalid, codeInvalidUTF8, "the body is not valid UTF-8 (at byte %d): JSON text is UTF-8, and invalid bytes are refused, not replaced", invalidAt(b))
	}
	if i := loneSurrogate(b); i >= 0 {
		return fault.New(fault.Invalid, codeInvalidUTF8, "the body's escape at byte %d is half of a UTF-16 surrogate pair, which is no character: it is refused, not replaced", i)
	}
	return c.Next()
}

// loneSurrogate returns the offset of the first \u escape in a JSON text
// that is a UTF-16 surrogate without its other half (which encoding/json
// would turn into U+FFFD), or -1. Backslashes appear only in strings, so
// the scan needs no parser.
func loneSurrogate(b []byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 >= len(b) {
			continue
		}
		if b[i+1] != 'u' {
			i++ // \" \\ \/ \b \f \n \r \t
			continue
		}
		r, ok := hex4(b[i+2:])
		switch {
		case !ok:
			return -1 // not JSON; the decoder says so
		case r >= 0xD800 && r <= 0xDBFF:
			if lo, ok := hex4(b[min(i+8, len(b)):]); i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' && ok && lo >= 0xDC00 && lo <= 0xDFFF {
				i += 11
				continue
			}
			return i
		case r >= 0xDC00 && r <= 0xDFFF:
			return i
		}
		i += 5
	}
	return -1
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// jsonType refuses a Content-Type that is not JSON: application/json or a
// +json type, with no charset but UTF-8.
func jsonType(ct string) error {
	if ct == fiber.MIMEApplicationJSON {
		return nil // what nearly every client sends: mime.ParseMediaType's answer, without its map
	}
	if strings.TrimSpace(ct) == "" {
		return &statusError{status: fiber.StatusUnsupportedMediaType, code: codeUnsupportedMediaType,
			message: "the body is JSON: send it with Content-Type: application/json (curl: -H 'Content-Type: application/json')"}
	}
	mt, params, err := mime.ParseMediaType(ct)
	sub, isApp := strings.CutPrefix(mt, "application/")
	switch {
	case err != nil || !isApp || sub != "json" && !strings.HasSuffix(sub, "+json"):
		return &statusError{status: fiber.StatusUnsupportedMediaType, code: codeUnsupportedMediaType,
			message: fmt.Sprintf("this route takes JSON (Content-Type: application/json), not %q", strings.ToValidUTF8(ct, "?"))}
	case params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8"):
		return &statusError{status: fiber.StatusUnsupportedMediaType, code: codeUnsupportedMediaType,
			message: fmt.Sprintf("JSON is UTF-8; charset %q is not taken", strings.ToValidUTF8(params["charset"], "?"))}
	}
	return nil
}

// invalidAt returns the offset of b's first byte that is not UTF-8.
func invalidAt(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// body returns the request body (raw: a Content-Encoding is not undone) and
// refuses one over limit.
func body(c *fiber.Ctx, limit int) ([]byte, error) {
	b := c.Request().Body()
	if len(b) > limit {
		return nil, fault.New(fault.TooLarge, codeBodyTooLarge, "request body is %d bytes; this route takes at most %d", len(b), limit)
	}
	return b, nil
}

// decode reads a JSON object body into v, refusing unknown fields, trailing
// data and wrong types. An empty body reads as {}.
func decode(b []byte, v any, fields string) error {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || string(t) == "{}" {
		if plainStruct(v) {
			return nil // what {} decodes into a struct: nothing
		}
		b = []byte("{}")
	} else if t[0] != '{' {
		return fault.New(fault.Invalid, codeInvalidJSON, "the body must be a JSON object; this route takes %s", fields)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fault.New(fault.Invalid, codeUnknownField, "%s; this route takes %s", strings.TrimPrefix(err.Error(), "json: "), fields)
		case errors.As(err, &typeErr):
			if typeErr.Field == "" {
				return fault.New(fault.Invalid, codeInvalidJSON, "the body must be a JSON object, not %s", typeErr.Value)
			}
			return fault.New(fault.Invalid, codeInvalidType, "%s must not be a JSON %s", typeErr.Field, typeErr.Value)
		case errors.As(err, &syntaxErr), errors.Is(err, io.ErrUnexpectedEOF):
			return fault.New(fault.Invalid, codeInvalidJSON, "the body is not valid JSON: %v", err)
		}
		return fault.New(fault.Invalid, codeInvalidJSON, "the body is not a JSON object: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fault.New(fault.Invalid, codeInvalidJSON, "the body must hold one JSON object and nothing after it")
	}
	return nil
}

// plainStruct reports whether v points to a struct that decodes JSON
// itself in no way (no json.Unmarshaler), which {} leaves as it is.
func plainStruct(v any) bool {
	t := reflect.TypeOf(v)
	return t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct && !t.Implements(unmarshalerType) && !reflect.ValueOf(v).IsNil()
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// reply writes a mutation's stored or fresh answer.
func reply(c *fiber.Ctx, r idem.Reply, err error) error {
	if err != nil {
		return err
	}
	if r.Replayed {
		c.Set("Idempotent-Replayed", "true")
	}
	status := fiber.StatusOK
	if r.Created {
		status = fiber.StatusCreated
	}
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(status).Send(r.Body)
}
