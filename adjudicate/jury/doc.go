// Package jury is Assay's tier-1 jury: a panel of LLM jurors that vote on
// semantic criteria, the ones no machine can check ("the summary is
// faithful to the source").
//
// A Panel asks every juror (one per configured model; the same model may
// sit more than once) concurrently, through github.com/sashabaranov/go-openai,
// at any OpenAI-compatible server: a hosted API, or a local llama.cpp
// server, vLLM or Ollama. Each juror sees the criterion, the value at the
// criterion's path and a bounded excerpt of the whole deliverable, framed
// as untrusted data that cannot instruct it, and answers one JSON object
// {"vote": "pass"|"fail"|"abstain", "rationale": "..."}, asked for with a
// JSON-schema response format and, when the server rejects that, with JSON
// mode; either way the answer is parsed strictly, and anything else is no
// vote.
//
// A strict majority of all jurors decides: more than half voting pass is a
// pass, more than half voting fail is a fail. Anything else (a tie,
// abstentions, errors, timeouts, unparsable answers) is no decision: Vote
// returns an *adjudicate.NoMajorityError and the case is escalated to a
// person, never settled by a coin flip. Either way every juror's vote is
// returned (model, server host, vote, rationale cut short, SHA-256 of the
// prompt and of the raw answer, latency, error) so that adjudicate records
// it and the verdict's checks show how the jury voted. The prompt's hash
// is over the JSON array of the chat messages sent, [{"role","content"}],
// without HTML escaping; the answer's over the raw text of
// choices[0].message.content. Re-asking a model
// does not reproduce its answer: the record is the evidence.
//
// Sampling temperature is 0, and it is really sent. go-openai's
// ChatCompletionRequest.Temperature is a float32 tagged omitempty, so a
// plain 0 never reaches the server, which then samples at its default
// (go-openai issues #9 and #678; v1.43.0 has no field that can carry an
// explicit 0 on chat completions). The Panel therefore sends its requests
// through an HTTPDoer (go-openai's ClientConfig.HTTPClient extension point)
// that writes "temperature":0 into a chat-completion body that has no
// temperature.
//
// Each juror's call is bounded by the per-call timeout, retries included:
// a 429 or 5xx answer is retried with exponential backoff while the next
// attempt still fits before the deadline.
//
// Configuration comes from Config, or from the environment through
// FromEnv: ASSAY_JURY_BASE_URL, ASSAY_JURY_API_KEY, ASSAY_JURY_MODELS
// (comma separated) and ASSAY_JURY_TIMEOUT (per call, default 30s).
package jury
