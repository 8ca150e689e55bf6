package jury

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// zeroTemperature is an openai.HTTPDoer that makes a chat-completion
// request carry "temperature":0 when it carries no temperature at all.
//
// go-openai v1.43.0 declares ChatCompletionRequest.Temperature as a float32
// tagged omitempty, so the 0 a juror asks for is dropped from the body and
// the server samples at its default (usually 0.8 or 1). The library has no
// field that can carry an explicit 0 on chat completions; its extension
// point for what goes on the wire is ClientConfig.HTTPClient, so the fix
// lives here. A body that already names a temperature is left alone.
type zeroTemperature struct {
	next openai.HTTPDoer
}

var _ openai.HTTPDoer = zeroTemperature{}

func (z zeroTemperature) Do(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || !strings.HasSuffix(req.URL.Path, "/chat/completions") {
		return z.next.Do(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("jury: reading request body: %w", err)
	}
	if body, err = withZeroTemperature(body); err != nil {
		return nil, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return z.next.Do(req)
}

// withZeroTemperature returns the JSON object body with "temperature":0
// added when it has no temperature member.
func withZeroTemperature(body []byte) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("jury: request body is not a JSON object: %w", err)
	}
	if _, ok := m["temperature"]; ok {
		return body, nil
	}
	m["temperature"] = json.RawMessage("0")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("jury: request body: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
