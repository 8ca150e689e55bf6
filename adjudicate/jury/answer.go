package jury

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/assayhq/assay/adjudicate"
)

// answerSchema is the JSON schema of a juror's answer, sent as the
// json_schema response format.
var answerSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"vote":{"type":"string","enum":["pass","fail","abstain"]},` +
	`"rationale":{"type":"string"}},` +
	`"required":["vote","rationale"],"additionalProperties":false}`)

// answer is a juror's parsed answer.
type answer struct {
	vote, rationale string
}

// parseAnswer parses a juror's raw answer strictly: exactly one JSON
// object, with exactly the members vote (one of pass, fail, abstain) and
// rationale (a string), each once; white space around it and nothing else.
// A code fence, a second object, an unknown or repeated member, a wrong
// type or a null are errors.
func parseAnswer(raw string) (answer, error) {
	if !utf8.ValidString(raw) {
		return answer{}, errors.New("not UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return answer{}, errors.New("not a JSON object")
	}
	var a answer
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return answer{}, fmt.Errorf("bad JSON: %w", err)
		}
		key, _ := tok.(string)
		if seen[key] {
			return answer{}, fmt.Errorf("member %q repeated", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return answer{}, fmt.Errorf("bad JSON: %w", err)
		}
		var s string
		if v[0] != '"' || json.Unmarshal(v, &s) != nil {
			if key == "vote" || key == "rationale" {
				return answer{}, fmt.Errorf("member %q is not a string", key)
			}
		}
		switch key {
		case "vote":
			switch s {
			case adjudicate.JurorPass, adjudicate.JurorFail, adjudicate.JurorAbstain:
				a.vote = s
			default:
				return answer{}, fmt.Errorf("vote %q is not pass, fail or abstain", truncate(s, 40))
			}
		case "rationale":
			a.rationale = s
		default:
			return answer{}, fmt.Errorf("unknown member %q", truncate(key, 40))
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return answer{}, errors.New("bad JSON: object not closed")
	}
	if _, err := dec.Token(); err != io.EOF {
		return answer{}, errors.New("text after the JSON object")
	}
	if !seen["vote"] || !seen["rationale"] {
		return answer{}, errors.New("vote or rationale missing")
	}
	return a, nil
}

// truncate cuts s to at most max bytes on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
