package replays

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/assayhq/assay/checkers"
	"github.com/assayhq/assay/runtime/fault"
	"github.com/assayhq/assay/wasm"
)

// Bounds of a batch (POST /replays).
const (
	// MaxBatch is the most artifacts one batch replays.
	MaxBatch = 1000
	// MaxArtifactBytes bounds one artifact, and the evidence, as the
	// checker sees them (after decoding).
	MaxArtifactBytes = 4 << 20
	// MaxBodyBytes bounds a batch's JSON body.
	MaxBodyBytes = 8 << 20
	// BatchTimeout bounds a whole batch, within the server's write timeout
	// of a minute: replays not started by then are not run, replays still
	// running are stopped (within a fuel slice), and the batch answers
	// batch_timeout.
	BatchTimeout = 45 * time.Second
	// MaxOutputBytes bounds the output a batch's answer carries: the
	// stdout, stderr and detail of its outcomes, as JSON text. Past it,
	// outcomes keep their kind, exit code, fuel and the output's hashes,
	// but drop stdout and stderr and cut the detail to TrimmedDetailBytes;
	// Response.Trimmed lists them. A batch's answer is then at most this
	// plus MaxBatch outcomes of bounded size (about 8 KiB each).
	MaxOutputBytes = 8 << 20
	// TrimmedDetailBytes is the most of a trimmed outcome's detail kept.
	TrimmedDetailBytes = 1 << 10
)

// Encodings of a batch's artifacts and evidence.
const (
	// EncodingJSON: a JSON string is given to the checker as its
	// contents, any other JSON value as its JSON bytes, as the market
	// gives a listing's artifact.
	EncodingJSON = "json"
	// EncodingBase64: each is a JSON string holding the bytes in standard
	// base64, for binary artifacts.
	EncodingBase64 = "base64"
)

// Request is a batch: one checker, many artifacts.
type Request struct {
	// Checker names a checker the court stores (POST /checkers), with the
	// limits it runs under, as in a criteria object.
	Checker checkers.Ref `json:"checker"`
	// Artifacts are replayed in order, each as /in/artifact and stdin.
	Artifacts []json.RawMessage `json:"artifacts"`
	// Evidence, when given, is /in/evidence for every artifact.
	Evidence json.RawMessage `json:"evidence,omitempty"`
	// Encoding is EncodingJSON (the default) or EncodingBase64.
	Encoding string `json:"encoding,omitempty"`
	// NoMemo runs every artifact even when its outcome is memoised, and
	// memoises nothing: for measurement.
	NoMemo bool `json:"no_memo,omitempty"`
}

// RequestFields names Request's fields, for error messages.
const RequestFields = "checker, artifacts, evidence, encoding, no_memo"

// Response is a batch's answer: an outcome per artifact, in order.
type Response struct {
	Count int `json:"count"`
	// MemoHits counts the outcomes answered from the memo, without a run.
	MemoHits int            `json:"memo_hits"`
	Outcomes []wasm.Outcome `json:"outcomes"`
	// Trimmed lists, in order, the outcomes whose stdout and stderr were
	// dropped, and detail cut, to keep the answer within MaxOutputBytes.
	Trimmed []int `json:"trimmed,omitempty"`
}

// Trim keeps r's output within MaxOutputBytes: outcomes in order keep
// theirs while it fits, and the rest are trimmed (see MaxOutputBytes). It
// is idempotent.
func (r *Response) Trim() {
	total := 0
	was := r.Trimmed
	var trimmed []int
	for i := range r.Outcomes {
		o := &r.Outcomes[i]
		n := jsonLen(o.Stdout) + jsonLen(o.Stderr) + jsonLen(o.Detail)
		again := len(was) > 0 && was[0] == i
		if again {
			was = was[1:]
		}
		if total+n <= MaxOutputBytes && !again {
			total += n
			continue
		}
		o.Stdout, o.Stderr = "", ""
		if len(o.Detail) > TrimmedDetailBytes {
			o.Detail = strings.ToValidUTF8(o.Detail[:TrimmedDetailBytes], "")
		}
		total += jsonLen(o.Detail)
		trimmed = append(trimmed, i)
	}
	r.Trimmed = trimmed
}

// jsonLen is the length of s as encoding/json writes it in a string,
// quotes aside: control characters, <, > and &, U+2028, U+2029 and each
// byte of invalid UTF-8 take six bytes (\u00XX, \ufffd), " and \\ two.
func jsonLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				n += 6
			case c == '"' || c == '\\':
				n += 2
			default:
				n++
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}

// BatchRunner replays one checker on many inputs at once, on its pool and
// through its memo; *checkers.Runner is one.
type BatchRunner interface {
	RunBatch(ctx context.Context, ref checkers.Ref, inputs []wasm.Input, opts checkers.BatchOptions) ([]checkers.Result, error)
}

var _ BatchRunner = (*checkers.Runner)(nil)

// Service replays batches on one node's Runner: its pool and its memo.
type Service struct {
	runner BatchRunner
	// Timeout bounds a batch that Replay runs; 0 means BatchTimeout.
	Timeout time.Duration
}

// NewService returns a Service on runner; nil answers every batch
// checkers_unavailable.
func NewService(runner BatchRunner) *Service { return &Service{runner: runner} }

// Runner returns the runner the Service replays on.
func (s *Service) Runner() BatchRunner { return s.runner }

// Replay runs req's checker against each of its artifacts, in parallel on
// the runner's pool, and answers the outcomes in the order of the
// artifacts. A timeout is an outcome like any other (and is never
// memoised).
//
// # Errors
//
// missing_field (no checker or no artifacts), invalid_checker (a malformed
// reference), invalid_encoding, invalid_artifact, invalid_evidence (400);
// checker_not_found (404); batch_too_large, artifact_too_large (413);
// checkers_unavailable, batch_timeout (503: the batch took longer than
// its Timeout; its guests are stopped); the store's own error when it could not give the checker
// (store_contention, or an internal error); or ctx's error when it ended
// first.
func (s *Service) Replay(ctx context.Context, req Request) (Response, error) {
	inputs, err := s.inputs(req)
	if err != nil {
		return Response{}, err
	}
	bound := cmp.Or(s.Timeout, BatchTimeout)
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	results, err := s.runner.RunBatch(ctx, req.Checker, inputs, checkers.BatchOptions{NoMemo: req.NoMemo})
	switch {
	case errors.Is(err, checkers.ErrNotFound):
		return Response{}, fault.New(fault.NotFound, ECodeCheckerNotFound, "no checker with sha256 %s; upload it with POST /checkers first", req.Checker.SHA256)
	case err != nil && parent.Err() != nil:
		return Response{}, parent.Err()
	case err != nil && ctx.Err() != nil:
		return Response{}, batchTimeout(len(inputs), bound)
	case err != nil:
		// The reference was checked above: what is left is the store
		// failing to give the checker, a 503 or a 500 by its own kind,
		// never the caller's fault.
		return Response{}, fmt.Errorf("replays: read checker %s: %w", req.Checker.SHA256, err)
	}
	resp := Response{Count: len(results), Outcomes: make([]wasm.Outcome, len(results))}
	for i, r := range results {
		if r.Err != nil {
			// RunBatch read the checker and checked the reference, so
			// only the context ends a job without an outcome.
			return Response{}, fmt.Errorf("replays: artifact %d: %w", i, r.Err)
		}
		if r.Outcome.Kind == wasm.KindTimeout && parent.Err() == nil && ctx.Err() != nil {
			// Cut short by the batch's bound, not its own backstop.
			return Response{}, batchTimeout(len(inputs), bound)
		}
		resp.Outcomes[i] = r.Outcome
		if r.Memo {
			resp.MemoHits++
		}
	}
	resp.Trim()
	return resp, nil
}

func batchTimeout(n int, bound time.Duration) error {
	return fault.New(fault.Unavailable, ECodeBatchTimeout, "the batch of %d did not finish within %s; send fewer artifacts, or give the checker less fuel", n, bound)
}

// inputs checks req and decodes its artifacts and evidence.
func (s *Service) inputs(req Request) ([]wasm.Input, error) {
	switch {
	case s.runner == nil:
		return nil, fault.New(fault.Unavailable, ECodeCheckersUnavailable, "this server runs no sandbox, so it cannot replay checkers")
	case req.Checker.SHA256 == "":
		return nil, fault.New(fault.Invalid, ECodeMissingField, "checker.sha256 is required")
	case len(req.Artifacts) == 0:
		return nil, fault.New(fault.Invalid, ECodeMissingField, "artifacts is required: a list of 1 to %d artifacts", MaxBatch)
	case len(req.Artifacts) > MaxBatch:
		return nil, fault.New(fault.TooLarge, ECodeBatchTooLarge, "a batch is at most %d artifacts; this one has %d", MaxBatch, len(req.Artifacts))
	case req.Encoding != "" && req.Encoding != EncodingJSON && req.Encoding != EncodingBase64:
		return nil, fault.New(fault.Invalid, ECodeInvalidEncoding, "encoding is %q or %q, not %q", EncodingJSON, EncodingBase64, req.Encoding)
	}
	if err := req.Checker.Validate(); err != nil {
		return nil, fault.New(fault.Invalid, ECodeInvalidChecker, "%v", err)
	}
	var evidence []byte
	if len(req.Evidence) > 0 {
		var err error
		if evidence, err = decodeValue(req.Evidence, req.Encoding); err != nil {
			return nil, fault.New(fault.Invalid, ECodeInvalidEvidence, "evidence: %v", err)
		}
		if len(evidence) > MaxArtifactBytes {
			return nil, fault.New(fault.TooLarge, ECodeArtifactTooLarge, "evidence is %d bytes; at most %d", len(evidence), MaxArtifactBytes)
		}
	}
	inputs := make([]wasm.Input, len(req.Artifacts))
	for i, raw := range req.Artifacts {
		b, err := decodeValue(raw, req.Encoding)
		if err != nil {
			return nil, fault.New(fault.Invalid, ECodeInvalidArtifact, "artifacts[%d]: %v", i, err)
		}
		if len(b) > MaxArtifactBytes {
			return nil, fault.New(fault.TooLarge, ECodeArtifactTooLarge, "artifacts[%d] is %d bytes; at most %d", i, len(b), MaxArtifactBytes)
		}
		inputs[i] = wasm.Input{Artifact: b, Evidence: evidence}
	}
	return inputs, nil
}

// decodeValue returns the bytes a checker sees of one JSON value. Under
// EncodingJSON a string gives its contents and any other value its JSON
// text, as the market gives a listing's artifact; null is refused. Under
// EncodingBase64 the value must be a string of standard base64.
func decodeValue(raw json.RawMessage, encoding string) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, errors.New("must not be null")
	}
	var s string
	isString := raw[0] == '"'
	if isString {
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
	}
	if encoding == EncodingBase64 {
		if !isString {
			return nil, errors.New("with encoding base64, must be a string")
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("not standard base64: %v", err)
		}
		return b, nil
	}
	if isString {
		return []byte(s), nil
	}
	return []byte(raw), nil
}
