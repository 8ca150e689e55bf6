package api

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/runtime/replays"
)

// putChecker uploads a checker to the checker registry: its bytes as the
// body, its kind named by the Content-Type.
func putChecker(s *server, c *call) (answer, error) {
	ct, _, _ := strings.Cut(c.header(fiber.HeaderContentType), ";")
	var kind string
	switch strings.TrimSpace(strings.ToLower(ct)) {
	case "application/wasm":
		kind = replays.KindWasm
	case "text/x-python":
		kind = replays.KindPython
	default:
		return answer{}, fault.New(fault.Invalid, codeUnsupportedCheckerKind, "send the checker's bytes with Content-Type: application/wasm, or Python source with text/x-python, not %q", ct)
	}
	if s.cfg.Checkers == nil {
		return answer{}, fault.New(fault.Unavailable, replays.ECodeCheckersUnavailable, "this server keeps no checkers")
	}
	r, err := s.cfg.Checkers.Put(c.ctx, c.actor, kind, c.body, c.ik)
	return answer{reply: &r}, err
}

// checkerToolIn is upload_checker's input: the checker's bytes as base64,
// or Python source as text (one of the two).
func checkerToolIn() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"wasm_base64": {Type: "string", ContentEncoding: "base64", Description: "a WebAssembly module (wasip1 command), standard base64; send this or python"},
		"python":      {Type: "string", Description: "Python assertion source (completion is pass, an exception fails); send this or wasm_base64"},
	}, OneOf: []*jsonschema.Schema{{Required: []string{"wasm_base64"}}, {Required: []string{"python"}}}}
}

// checkerToolRequest is upload_checker's arguments as POST /checkers
// takes them: the bytes, and their kind as the Content-Type.
func checkerToolRequest(args map[string]json.RawMessage) ([]byte, string, error) {
	var wasm, py *string
	for name, dst := range map[string]**string{"wasm_base64": &wasm, "python": &py} {
		if v, ok := args[name]; ok {
			var s string
			if json.Unmarshal(v, &s) != nil {
				return nil, "", fault.New(fault.Invalid, codeInvalidArguments, "%s must be a string", name)
			}
			*dst = &s
		}
	}
	switch {
	case len(args) != 1 || (wasm == nil) == (py == nil):
		return nil, "", fault.New(fault.Invalid, codeInvalidArguments, "send exactly one of wasm_base64 and python")
	case py != nil:
		return []byte(*py), "text/x-python", nil
	}
	b, err := base64.StdEncoding.DecodeString(*wasm)
	if err != nil {
		return nil, "", fault.New(fault.Invalid, codeInvalidArguments, "wasm_base64 is not standard base64: %v", err)
	}
	return b, "application/wasm", nil
}

func (s *server) checker(c *call) (replays.Info, error) {
	if s.cfg.Checkers == nil {
		return replays.Info{}, fault.New(fault.Unavailable, replays.ECodeCheckersUnavailable, "this server keeps no checkers")
	}
	return s.cfg.Checkers.Info(c.ctx, c.param("sha256"))
}
