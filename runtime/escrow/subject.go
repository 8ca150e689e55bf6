package escrow

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/assayhq/assay/adjudicate"
	"github.com/assayhq/assay/runtime/receipt"
)

// Interface guard.
var _ receipt.Canonicaler = VerdictSubject{}

// The members CanonicalMembers and appendCheck write by name. A string
// field added to VerdictSubject since (an optional actor, say) is written
// too, found by reflection (verdictStrings). Should a field of another
// type be added to VerdictSubject, or any field to adjudicate.Check,
// without these learning it, receipts are signed from the subject's JSON
// text again: slower, never missing a member.
var (
	verdictStrings, verdictMembers = extraStrings(reflect.TypeFor[VerdictSubject](),
		"buyer checks contract_hash contract_id criteria_sha256,omitempty currency decided_at evidence_hash,omitempty payout price reason,omitempty seller tier verdict")
	checkMembers = jsonNames(reflect.TypeFor[adjudicate.Check]()) == "detail jurors kind outcome passed skipped spec"
)

// stringField is a string field of a struct and how encoding/json names it.
type stringField struct {
	index     int
	name      string
	omitEmpty bool
}

// extraStrings returns the fields of t that known (their JSON tags, in
// name order) does not name, and whether the fields known names are there
// with those very tags and the others are all strings that encoding/json
// writes as such.
func extraStrings(t reflect.Type, known string) ([]stringField, bool) {
	var out []stringField
	var tags []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		if slices.ContainsFunc(strings.Fields(known), func(k string) bool { n, _, _ := strings.Cut(k, ","); return n == name }) {
			tags = append(tags, tag)
			continue
		}
		if name == "-" || !f.IsExported() || f.Type.Kind() != reflect.String || strings.Contains(opts, "string") {
			return nil, false
		}
		out = append(out, stringField{index: i, name: name, omitEmpty: slices.Contains(strings.Split(opts, ","), "omitempty") || slices.Contains(strings.Split(opts, ","), "omitzero")})
	}
	slices.Sort(tags)
	return out, strings.Join(tags, " ") == known
}

// jsonNames lists the JSON names of a struct's fields, sorted.
func jsonNames(t reflect.Type) string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	slices.Sort(names)
	return strings.Join(names, " ")
}

// verdictText is a VerdictSubject signed from its JSON text.
type verdictText VerdictSubject

// signable is what finalize signs: v itself, or its JSON text when
// CanonicalMembers does not know all of its fields.
func (v VerdictSubject) signable() any {
	if verdictMembers {
		return v
	}
	return verdictText(v)
}

// CanonicalMembers gives the subject's members in RFC 8785 form, the bytes
// receipt.Canonical would give the struct's JSON, so that signing a
// verdict canonicalises it once, from the struct. Only the checks, which
// carry criteria's JSON, go through a JSON text.
func (v VerdictSubject) CanonicalMembers() ([]receipt.Member, error) {
	if !verdictMembers {
		return nil, errors.New("escrow: VerdictSubject has fields CanonicalMembers does not write; sign signable()")
	}
	ms := make([]receipt.Member, 0, 14)
	buf := make([]byte, 0, 512)
	str := func(name, s string) {
		start := len(buf)
		buf = receipt.AppendString(buf, s)
		ms = append(ms, receipt.Member{Name: name, Value: buf[start:len(buf):len(buf)]})
	}
	str("contract_id", v.ContractID)
	str("contract_hash", v.ContractHash)
	if v.EvidenceHash != "" {
		str("evidence_hash", v.EvidenceHash)
	}
	str("buyer", v.Buyer)
	str("seller", v.Seller)
	start := len(buf)
	var err error
	if buf, err = receipt.AppendInt(buf, v.Price); err != nil {
		return nil, err
	}
	ms = append(ms, receipt.Member{Name: "price", Value: buf[start:len(buf):len(buf)]})
	str("currency", v.Currency)
	str("verdict", v.Verdict)
	str("tier", v.Tier)
	var checks []byte
	switch {
	case v.Checks == nil:
		checks = []byte("null")
	case len(v.Checks) == 0:
		checks = []byte("[]")
	default:
		checks = append(checks, '[')
		for i := range v.Checks {
			if i > 0 {
				checks = append(checks, ',')
			}
			if checks, err = appendCheck(checks, &v.Checks[i]); err != nil {
				return nil, err
			}
		}
		checks = append(checks, ']')
	}
	ms = append(ms, receipt.Member{Name: "checks", Value: checks})
	start = len(buf)
	if v.Payout == nil {
		buf = append(buf, "null"...)
	} else {
		names := slices.SortedFunc(maps.Keys(v.Payout), receipt.CompareNames)
		buf = append(buf, '{')
		for i, name := range names {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = receipt.AppendString(buf, name)
			buf = append(buf, ':')
			if buf, err = receipt.AppendInt(buf, v.Payout[name]); err != nil {
				return nil, err
			}
		}
		buf = append(buf, '}')
	}
	ms = append(ms, receipt.Member{Name: "payout", Value: buf[start:len(buf):len(buf)]})
	if v.Reason != "" {
		str("reason", v.Reason)
	}
	if v.CriteriaSHA256 != "" {
		str("criteria_sha256", v.CriteriaSHA256)
	}
	str("decided_at", v.DecidedAt)
	if len(verdictStrings) > 0 {
		rv := reflect.ValueOf(v)
		for _, f := range verdictStrings {
			if s := rv.Field(f.index).String(); s != "" || !f.omitEmpty {
				str(f.name, s)
			}
		}
	}
	return ms, nil
}

// appendCheck appends a check in RFC 8785 form: written from its fields
// when it is a plain one (no checker outcome, no jury votes), else through
// its JSON text.
func appendCheck(dst []byte, c *adjudicate.Check) ([]byte, error) {
	if !checkMembers || c.Outcome != nil || c.Jurors != nil {
		b, err := receipt.Canonical(c)
		return append(dst, b...), err
	}
	spec := []byte("null")
	if len(c.Spec) > 0 {
		var err error
		if spec, err = receipt.CanonicalJSON(c.Spec); err != nil {
			return dst, err
		}
	}
	buf := make([]byte, 0, 32+len(c.Kind)+len(c.Detail))
	buf = receipt.AppendString(buf, c.Kind)
	kind := len(buf)
	buf = receipt.AppendString(buf, c.Detail)
	ms := []receipt.Member{
		{Name: "kind", Value: buf[:kind:kind]},
		{Name: "detail", Value: buf[kind:]},
		{Name: "passed", Value: boolJSON(c.Passed)},
		{Name: "spec", Value: spec},
	}
	if c.Skipped {
		ms = append(ms, receipt.Member{Name: "skipped", Value: boolJSON(true)})
	}
	b, err := receipt.CanonicalObject(ms)
	return append(dst, b...), err
}

func boolJSON(b bool) []byte {
	if b {
		return []byte("true")
	}
	return []byte("false")
}
