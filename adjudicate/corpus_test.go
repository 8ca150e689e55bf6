package adjudicate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// hostileCase is one entry of testdata/budget/hostile.json: criteria that
// try to take a decision past its budget or its memory, and the
// deliverable they are decided against. e2e/budget_test.go runs the same
// file against a server.
type hostileCase struct {
	Name        string          `json:"name"`
	Criteria    json.RawMessage `json:"criteria"`
	Deliverable json.RawMessage `json:"deliverable"`
	// Generate names a large deliverable made by generateDeliverable.
	Generate string `json:"generate"`
	// Repeat repeats every assertion Repeat times, {i} in it replaced by
	// the repetition's index.
	Repeat int `json:"repeat"`
	// Error is the code Compile refuses the criteria with; "" when it
	// compiles.
	Error string `json:"error"`
	// Verdict is the verdict decided, and Detail a part of the detail of
	// the last check that ran.
	Verdict string `json:"verdict"`
	Detail  string `json:"detail"`
}

func loadHostile(tb testing.TB) []hostileCase {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "budget", "hostile.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var cases []hostileCase
	if err := json.Unmarshal(b, &cases); err != nil {
		tb.Fatal(err)
	}
	return cases
}

// criteria returns the case's criteria with its assertions repeated and
// its placeholders filled in.
func (c hostileCase) criteria(tb testing.TB) []byte {
	tb.Helper()
	fill := func(s string, i int) string {
		s = strings.ReplaceAll(s, "{i}", strconv.Itoa(i))
		s = strings.ReplaceAll(s, "{big}", strings.Repeat("a", 4000))
		return strings.ReplaceAll(s, "{nodes1000}", strings.Repeat("1+", 498)+"1 > 0")
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(c.Criteria, &top); err != nil {
		tb.Fatal(err)
	}
	if raw, ok := top["assertions"]; ok {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			tb.Fatal(err)
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
	b, err := json.Marshal(top)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// deliverableJSON returns the case's deliverable.
func (c hostileCase) deliverableJSON() []byte {
	if c.Generate != "" {
		return generateDeliverable(c.Generate)
	}
	return c.Deliverable
}

// hostileBytes is the size of a generated deliverable: with the request
// around it, under the court's 1 MiB body limit.
const hostileBytes = 900 << 10

// generateDeliverable makes the large deliverables of the corpus.
func generateDeliverable(name string) []byte {
	var sb strings.Builder
	switch name {
	case "items": // ~20,000 line items
		sb.WriteString(`{"rows":140,"items":[`)
		for i := 0; sb.Len() < hostileBytes; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"item-%d","price":%d.5,"qty":%d}`, i, i%50+1, i%3+1)
		}
		sb.WriteString("]}")
	case "text": // one long string
		sb.WriteString(`{"text":"` + strings.Repeat("ab", hostileBytes/2) + `"}`)
	case "keys": // one object of ~75,000 keys
		sb.WriteString(`{"obj":{`)
		for i := 0; sb.Len() < hostileBytes; i++ {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `"k%07d":%d`, i, i)
		}
		sb.WriteString("}}")
	case "deep": // arrays 30 deep around 50,000 strings
		sb.WriteString(strings.Repeat("[", 30) + `"zz"` + strings.Repeat(`,"zz"`, 49999) + strings.Repeat("]", 30))
	case "bigids": // 200 items whose ids are 4,001 bytes
		sb.WriteString(`{"items":[`)
		for i := range 200 {
			if i > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"id":"%s%d"}`, strings.Repeat("a", 4000), i%10+300)
		}
		sb.WriteString("]}")
	default:
		panic("no generated deliverable " + name)
	}
	return []byte(sb.String())
}
