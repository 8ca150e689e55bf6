package jury

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/assayhq/assay/adjudicate"
)

// Panel is a jury: one juror per configured model, asked concurrently,
// decided by strict majority. It is safe for concurrent use.
type Panel struct {
	client           *openai.Client
	models           []string
	host             string
	timeout, backoff time.Duration
	valueBytes       int
	deliverableBytes int

	// noSchema holds the models whose server rejected the json_schema
	// response format; they are asked in JSON mode from then on.
	noSchema sync.Map // model -> struct{}
}

// Interface guard.
var _ adjudicate.Juror = (*Panel)(nil)

// New returns a Panel configured by cfg.
//
// # Errors
//
// When the base URL is not an http or https URL, there is no model or an
// empty one, more than MaxJurors, or a negative duration or bound.
func New(cfg Config) (*Panel, error) {
	host, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	oc.BaseURL = cfg.BaseURL
	oc.HTTPClient = zeroTemperature{next: cfg.HTTPClient}
	return &Panel{
		client:           openai.NewClientWithConfig(oc),
		models:           append([]string(nil), cfg.Models...),
		host:             host,
		timeout:          cfg.Timeout,
		backoff:          cfg.Backoff,
		valueBytes:       cfg.ValueBytes,
		deliverableBytes: cfg.DeliverableBytes,
	}, nil
}

// Models returns the panel's models, one per juror, in order.
func (p *Panel) Models() []string { return append([]string(nil), p.models...) }

// Host returns the host of the server the panel asks.
func (p *Panel) Host() string { return p.host }

// Vote asks every juror about q at once and decides by strict majority of
// all jurors. The returned Vote's Jurors holds each juror's vote, in the
// order of the configured models.
//
// # Notes
//
// The answer is nondeterministic: adjudicate.Judge records it, and
// adjudicate's Decide reads the record, never the panel.
//
// # Errors
//
// An *adjudicate.NoMajorityError, with every juror's vote, when neither
// pass nor fail has more than half the jurors: ties, abstentions, errors,
// timeouts and unparsable answers all count against a majority. The
// context's error when ctx ends first.
func (p *Panel) Vote(ctx context.Context, q adjudicate.SemanticQuestion) (adjudicate.Vote, error) {
	pr := buildPrompt(q, p.valueBytes, p.deliverableBytes)
	jurors := make([]adjudicate.JurorVote, len(p.models))
	var wg sync.WaitGroup
	for i, model := range p.models {
		wg.Go(func() { jurors[i] = p.ask(ctx, model, pr) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return adjudicate.Vote{}, err
	}

	var pass, fail, abstain, none int
	for _, j := range jurors {
		switch j.Vote {
		case adjudicate.JurorPass:
			pass++
		case adjudicate.JurorFail:
			fail++
		case adjudicate.JurorAbstain:
			abstain++
		default:
			none++
		}
	}
	n := len(jurors)
	tally := fmt.Sprintf("pass %d, fail %d, abstain %d, no vote %d", pass, fail, abstain, none)
	switch {
	case 2*pass > n:
		return adjudicate.Vote{Pass: true, Reason: fmt.Sprintf("%d of %d jurors voted pass (%s)", pass, n, tally), Jurors: jurors}, nil
	case 2*fail > n:
		return adjudicate.Vote{Pass: false, Reason: fmt.Sprintf("%d of %d jurors voted fail (%s)", fail, n, tally), Jurors: jurors}, nil
	}
	return adjudicate.Vote{}, &adjudicate.NoMajorityError{
		Reason: fmt.Sprintf("no majority of %d jurors: %s", n, tally),
		Jurors: jurors,
	}
}

// ask asks one juror and records its vote, or why it gave none.
func (p *Panel) ask(ctx context.Context, model string, pr prompt) adjudicate.JurorVote {
	jv := adjudicate.JurorVote{Model: model, Host: p.host, PromptSHA256: pr.sha256}
	start := time.Now()
	callCtx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	content, err := p.complete(callCtx, model, pr)
	jv.LatencyMS = time.Since(start).Milliseconds()
	if err != nil {
		if ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
			jv.Error = fmt.Sprintf("timed out after %s: %v", p.timeout, err)
		} else {
			jv.Error = err.Error()
		}
		jv.Error = truncate(jv.Error, MaxErrorBytes)
		return jv
	}
	sum := sha256.Sum256([]byte(content))
	jv.AnswerSHA256 = hex.EncodeToString(sum[:])
	a, err := parseAnswer(content)
	if err != nil {
		jv.Error = truncate("unparsable answer: "+err.Error(), MaxErrorBytes)
		return jv
	}
	jv.Vote, jv.Rationale = a.vote, truncate(a.rationale, MaxRationaleBytes)
	return jv
}

// complete sends one chat completion and returns the answer's text,
// retrying a 429 or 5xx with doubling backoff while the next attempt
// still fits before ctx's deadline, and falling back from the json_schema
// response format to JSON mode when the server rejects the request.
func (p *Panel) complete(ctx context.Context, model string, pr prompt) (string, error) {
	msgs := make([]openai.ChatCompletionMessage, len(pr.messages))
	for i, m := range pr.messages {
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
	}
	delay := p.backoff
	for {
		_, plain := p.noSchema.Load(model)
		req := openai.ChatCompletionRequest{
			Model:       model,
			Messages:    msgs,
			Temperature: 0, // dropped by omitempty; zeroTemperature sends it
			N:           1,
		}
		if plain {
			req.ResponseFormat = &openai.ChatCompletionResponseFormat{Type: openai.ChatCompletionResponseFormatTypeJSONObject}
		} else {
			req.ResponseFormat = &openai.ChatCompletionResponseFormat{
				Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
				JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
					Name: "juror_vote", Schema: answerSchema, Strict: true,
				},
			}
		}
		resp, err := p.client.CreateChatCompletion(ctx, req)
		if err == nil {
			if len(resp.Choices) == 0 {
				return "", errors.New("the answer has no choices")
			}
			return resp.Choices[0].Message.Content, nil
		}
		status := statusOf(err)
		switch {
		case !plain && (status == http.StatusBadRequest || status == http.StatusUnprocessableEntity):
			// The server does not take json_schema (or this request):
			// ask again in JSON mode, and from now on.
			p.noSchema.Store(model, struct{}{})
			continue
		case status == http.StatusTooManyRequests || status >= 500:
		default:
			return "", err
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < delay {
			return "", err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return "", err
		case <-t.C:
		}
		delay *= 2
	}
}

// statusOf returns the HTTP status of a go-openai error, 0 when it has
// none (a transport error, a cancelled context).
func statusOf(err error) int {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	return 0
}
