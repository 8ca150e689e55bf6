package jury

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// reply is one scripted answer of the fake server.
type reply struct {
	status  int           // 0 means 200
	content string        // choices[0].message.content, for 200
	wait    time.Duration // hold the answer this long, or until the client gives up
}

// script answers the n-th request (from 0) for a model; format is the
// request's response_format.type.
type script func(n int, format string) reply

func answerWith(vote, rationale string) script {
	return func(int, string) reply {
		return reply{content: fmt.Sprintf(`{"vote":%q,"rationale":%q}`, vote, rationale)}
	}
}

func raw(content string) script {
	return func(int, string) reply { return reply{content: content} }
}

// seenRequest is what the fake server saw of one request.
type seenRequest struct {
	Path        string
	Auth        string
	Model       string
	Temperature json.RawMessage // as sent, nil when absent
	Format      string          // response_format.type
	Schema      json.RawMessage // response_format.json_schema
	Messages    []message
	Body        map[string]json.RawMessage
}

// fakeOpenAI is an in-process OpenAI-compatible server speaking the chat
// completions protocol: POST /v1/chat/completions with a JSON body, JSON
// answers with choices[0].message.content, OpenAI-style error bodies.
type fakeOpenAI struct {
	*httptest.Server
	mu      sync.Mutex
	scripts map[string]script
	counts  map[string]int
	seen    []seenRequest
}

func newFakeOpenAI(tb testing.TB, scripts map[string]script) *fakeOpenAI {
	tb.Helper()
	f := &fakeOpenAI{scripts: scripts, counts: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	tb.Cleanup(f.Close)
	return f
}

// BaseURL is the base URL a client is configured with.
func (f *fakeOpenAI) BaseURL() string { return f.URL + "/v1" }

func (f *fakeOpenAI) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": "invalid_request_error", "code": nil,
	}})
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		writeError(w, http.StatusBadRequest, "content type "+ct)
		return
	}
	var body map[string]json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return
	}
	var req struct {
		Model          string    `json:"model"`
		Messages       []message `json:"messages"`
		ResponseFormat *struct {
			Type       string          `json:"type"`
			JSONSchema json.RawMessage `json:"json_schema"`
		} `json:"response_format"`
	}
	b, _ := json.Marshal(body)
	if err := json.Unmarshal(b, &req); err != nil {
		writeError(w, http.StatusBadRequest, "bad request: "+err.Error())
		return
	}
	s := seenRequest{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Model: req.Model,
		Temperature: body["temperature"], Messages: req.Messages, Body: body}
	if req.ResponseFormat != nil {
		s.Format, s.Schema = req.ResponseFormat.Type, req.ResponseFormat.JSONSchema
	}
	f.mu.Lock()
	f.seen = append(f.seen, s)
	id := len(f.seen)
	n := f.counts[req.Model]
	f.counts[req.Model]++
	sc := f.scripts[req.Model]
	f.mu.Unlock()
	if sc == nil {
		writeError(w, http.StatusNotFound, "model "+req.Model+" not found")
		return
	}
	rep := sc(n, s.Format)
	if rep.wait > 0 {
		select {
		case <-time.After(rep.wait):
		case <-r.Context().Done():
			return
		}
	}
	if rep.status != 0 && rep.status != http.StatusOK {
		writeError(w, rep.status, http.StatusText(rep.status))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", id), "object": "chat.completion", "created": 1700000000,
		"model": req.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": rep.content},
			"finish_reason": "stop",
		}},
		"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
	})
}
