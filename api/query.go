package api

import (
	"strconv"

	"github.com/assayhq/assay/runtime/fault"
)

// limitOf is the limit query parameter of every listing route (the
// court's activity and agents' receipts, the market's listings): def when
// it is absent, otherwise a positive integer, or 400 invalid_limit. A
// service may bound it further, under the same code (the market takes 1 to
// 100; def 0 leaves the default to it).
func limitOf(query func(string) string, def int) (int, error) {
	q := ""
	if query != nil {
		q = query("limit")
	}
	if q == "" {
		return def, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 {
		return 0, fault.New(fault.Invalid, codeInvalidLimit, "limit must be a positive integer")
	}
	return n, nil
}
