package jury

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// doerFunc records what go-openai puts on the wire.
type doerFunc func(*http.Request) (*http.Response, error)

func (f doerFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

func TestZeroTemperature(t *testing.T) {
	var bodies []string
	var lengths []int64
	rec := doerFunc(func(r *http.Request) (*http.Response, error) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		lengths = append(lengths, r.ContentLength)
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"{}"}}]}`))}, nil
	})
	send := func(doer openai.HTTPDoer, temp float32) {
		cfg := openai.DefaultConfig("")
		cfg.BaseURL, cfg.HTTPClient = "http://example.invalid/v1", doer
		_, err := openai.NewClientWithConfig(cfg).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
			Model: "m", Temperature: temp, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "<hi> & bye"}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	send(rec, 0)                        // the library alone
	send(zeroTemperature{next: rec}, 0) // through the juror's doer
	send(zeroTemperature{next: rec}, 0.5)

	temperature := func(body string) (string, bool) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatal(err)
		}
		v, ok := m["temperature"]
		return string(v), ok
	}
	if _, ok := temperature(bodies[0]); ok {
		t.Errorf("go-openai now sends a 0 temperature by itself: %s (the doer may be retired)", bodies[0])
	}
	if v, ok := temperature(bodies[1]); !ok || v != "0" || !strings.Contains(bodies[1], `"temperature":0`) {
		t.Errorf("body %s, want \"temperature\":0", bodies[1])
	}
	if int(lengths[1]) != len(bodies[1]) {
		t.Errorf("content length %d, body %d bytes", lengths[1], len(bodies[1]))
	}
	var req openai.ChatCompletionRequest
	if err := json.Unmarshal([]byte(bodies[1]), &req); err != nil || req.Messages[0].Content != "<hi> & bye" || req.Model != "m" {
		t.Errorf("body changed beyond the temperature: %s (%v)", bodies[1], err)
	}
	if v, _ := temperature(bodies[2]); v != "0.5" {
		t.Errorf("an explicit temperature was changed: %s", bodies[2])
	}
}
