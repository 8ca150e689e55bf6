package api_test

import (
	"testing"
)

// TestAPI_Limit: every listing route reads limit one way, with one code.
// The market's GET /market/listings read it with fiber's QueryInt, which
// took limit=x and limit=0 as no limit at all.
func TestAPI_Limit(t *testing.T) {
	m := serveMarket(t)
	for _, route := range []string{"/activity", "/agents/did:nanda:buyer/receipts", "/market/listings?query=squares"} {
		sep := "?"
		if route == "/market/listings?query=squares" {
			sep = "&"
		}
		t.Run(route, func(t *testing.T) {
			t.Run("OK", func(t *testing.T) {
				for _, q := range []string{"", "limit=1", "limit=100"} {
					path := route
					if q != "" {
						path += sep + q
					}
					m.ok(t, 200, "GET", path, "")
				}
			})
			t.Run("ErrInvalidLimit", func(t *testing.T) {
				for _, q := range []string{"limit=x", "limit=0", "limit=-1", "limit=1.5", "limit=1e3", "limit=99999999999999999999"} {
					m.refused(t, 400, "invalid_limit", "GET", route+sep+q, nil)
				}
			})
		})
	}
	// The market bounds it further, under the same code.
	m.refused(t, 400, "invalid_limit", "GET", "/market/listings?query=squares&limit=101", nil)
}
