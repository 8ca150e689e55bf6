// Package hostile is a corpus of hostile acceptance criteria for tests:
// criteria that try to take a decision past its budget or its memory (by
// building strings, arrays and maps, nesting loops, matching regular
// expressions against large deliverables, validating deep schemas, or
// repeating any of these in the 256 assertions criteria may hold), each
// with the deliverable it is decided against and what the court decides.
// adjudicate's tests decide them in process, e2e's against a server.
package hostile

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

//go:embed criteria.json
var corpus []byte

// Case is one hostile case of criteria.json.
type Case struct {
	Name string `json:"name"`
	// Error is the code the criteria are refused with when they compile
	// (a static limit); "" when they are decided.
	Error string `json:"error"`
	// Verdict is the verdict decided, and Detail a part of the detail of
	// the last check that ran.
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`

	RawCriteria    json.RawMessage `json:"criteria"`
	RawDeliverable json.RawMessage `json:"deliverable"`
	// Generate names a large deliverable Deliverable makes.
	Generate string `json:"generate"`
	// Repeat repeats every assertion Repeat times, {i} in it replaced by
	// the repetition's index.
	Repeat int `json:"repeat"`
}

// Cases returns the corpus.
func Cases() ([]Case, error) {
	var cases []Case
	if err := json.Unmarshal(corpus, &cases); err != nil {
		return nil, fmt.Errorf("hostile: criteria.json: %w", err)
	}
	return cases, nil
}

// Criteria returns the case's criteria with their assertions repeated and
// their placeholders filled in: {i}, the repetition; {big}, 4,000 bytes;
// {nodes1000}, an expression of 999 nodes.
func (c Case) Criteria() ([]byte, error) {
	fill := func(s string, i int) string {
		s = strings.ReplaceAll(s, "{i}", strconv.Itoa(i))
		s = strings.ReplaceAll(s, "{big}", strings.Repeat("a", 4000))
		return strings.ReplaceAll(s, "{nodes1000}", strings.Repeat("1+", 498)+"1 > 0")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(c.RawCriteria, &top); err != nil {
		return nil, fmt.Errorf("hostile: %s: %w", c.Name, err)
	}
	if raw, ok := top["assertions"]; ok {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("hostile: %s: %w", c.Name, err)
		}
		var out []string
		for i := range max(c.Repeat, 1) {
			for _, a := range list {
				out = append(out, fill(string(a), i))
			}
		}
		top["assertions"] = json.RawMessage("[" + strings.Join(out, ",") + "]")
	}
	if raw, ok := top["schema"]; ok {
		top["schema"] = json.RawMessage(fill(string(raw), 0))
	}
	return json.Marshal(top)
}

// Bytes is the size of a generated deliverable: with a request around it,
// under the court's 1 MiB body limit.
const Bytes = 900 << 10

// Deliverable returns the case's deliverable, made when it is a large one.
func (c Case) Deliverable() []byte {
	if c.Generate == "" {
		return c.RawDeliverable
	}
	var sb strings.Builder
	switch c.Generate {
	case "items": // about 20,000 line items
		sb.WriteString(`{"rows":140,"items":[`)
		for i := 0; sb.Len() < Bytes; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"item-%d","price":%d.5,"qty":%d}`, i, i%50+1, i%3+1)
		}
		sb.WriteString("]}")
	case "text": // one long string
		sb.WriteString(`{"text":"` + strings.Repeat("ab", Bytes/2) + `"}`)
	case "keys": // one object of about 75,000 keys
		sb.WriteString(`{"obj":{`)
		for i := 0; sb.Len() < Bytes; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `"k%07d":%d`, i, i)
		}
		sb.WriteString("}}")
	case "deep": // arrays 30 deep around 50,000 strings
		sb.WriteString(strings.Repeat("[", 30) + `"zz"` + strings.Repeat(`,"zz"`, 49999) + strings.Repeat("]", 30))
	case "bigids": // 200 items whose ids are 4,003 bytes, as long as most of the enum they meet
		sb.WriteString(`{"items":[`)
		for i := range 200 {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"%s%d"}`, strings.Repeat("a", 4000), i%10+300)
		}
		sb.WriteString("]}")
	default:
		panic("hostile: no generated deliverable " + c.Generate)
	}
	return []byte(sb.String())
}
