package escrow

import (
	"maps"
	"slices"

	"github.com/assayhq/assay/runtime/receipt"
)

// Interface guard.
var _ receipt.Canonicaler = VerdictSubject{}

// CanonicalMembers gives the subject's members in RFC 8785 form, the bytes
// receipt.Canonical would give the struct's JSON, so that signing a
// verdict canonicalises it once, from the struct. Only the checks, which
// carry criteria's JSON, go through a JSON text.
func (v VerdictSubject) CanonicalMembers() ([]receipt.Member, error) {
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
		if checks, err = receipt.Canonical(v.Checks); err != nil {
			return nil, err
		}
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
	return ms, nil
}
