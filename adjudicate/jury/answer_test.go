package jury

import (
	"strings"
	"testing"
)

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		vote, err string
	}{
		{"OKPass", `{"vote":"pass","rationale":"ok"}`, "pass", ""},
		{"OKFailReordered", `{"rationale":"no","vote":"fail"}`, "fail", ""},
		{"OKAbstainWhiteSpace", " \n{ \"vote\" : \"abstain\", \"rationale\" : \"\" }\n", "abstain", ""},
		{"ErrEmpty", ``, "", "not a JSON object"},
		{"ErrProse", `I vote pass.`, "", "not a JSON object"},
		{"ErrFence", "```json\n{\"vote\":\"pass\",\"rationale\":\"ok\"}\n```", "", "not a JSON object"},
		{"ErrArray", `[{"vote":"pass","rationale":"ok"}]`, "", "not a JSON object"},
		{"ErrTrailingText", `{"vote":"pass","rationale":"ok"} I am sure.`, "", "text after"},
		{"ErrSecondObject", `{"vote":"pass","rationale":"ok"}{"vote":"fail","rationale":"no"}`, "", "text after"},
		{"ErrUnknownMember", `{"vote":"pass","rationale":"ok","score":1}`, "", "unknown member"},
		{"ErrRepeatedMember", `{"vote":"fail","vote":"pass","rationale":"ok"}`, "", "repeated"},
		{"ErrVoteNotString", `{"vote":true,"rationale":"ok"}`, "", "not a string"},
		{"ErrVoteNull", `{"vote":null,"rationale":"ok"}`, "", "not a string"},
		{"ErrRationaleNumber", `{"vote":"pass","rationale":3}`, "", "not a string"},
		{"ErrVoteCase", `{"vote":"PASS","rationale":"ok"}`, "", "not pass, fail or abstain"},
		{"ErrVoteYes", `{"vote":"yes","rationale":"ok"}`, "", "not pass, fail or abstain"},
		{"ErrMissingRationale", `{"vote":"pass"}`, "", "missing"},
		{"ErrMissingVote", `{"rationale":"ok"}`, "", "missing"},
		{"ErrUnclosed", `{"vote":"pass","rationale":"ok"`, "", "bad JSON"},
		{"ErrNotUTF8", "{\"vote\":\"pass\",\"rationale\":\"\xff\"}", "", "UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := parseAnswer(tc.raw)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || a.vote != tc.vote {
				t.Fatalf("%+v %v", a, err)
			}
		})
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{`{"vote":"pass","rationale":"ok"}`, `{"vote":"fail","vote":"pass"}`, `{"a":[1,{"b":2}]}`, `{}`, `"x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		a, err := parseAnswer(raw)
		if err == nil && a.vote != "pass" && a.vote != "fail" && a.vote != "abstain" {
			t.Fatalf("vote %q accepted", a.vote)
		}
	})
}
