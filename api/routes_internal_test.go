package api

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTable_At: the route table's path matcher finds the routes that each
// path's regular expression (quotedParams) matches, in the same order, for
// the paths of every route served and paths beside them, and for paths
// whose parameters are not whole segments.
func TestTable_At(t *testing.T) {
	_, s := fullServer(t)
	tables := map[string]*table{"served": s.routes}
	odd := newTable()
	for _, p := range []string{"/", "/x/{a}.json", "/{id}", "/{id}/receipts", "/a{b}", "/a{b}/c", "/v/{a}-{b}", "/{A}", "/q/{a}"} {
		odd.add(&route{method: "GET", path: p})
		odd.add(&route{method: "POST", path: p})
	}
	tables["odd"] = odd
	for name, tb := range tables {
		t.Run(name, func(t *testing.T) {
			var paths []string
			for _, p := range tb.patterns {
				for _, v := range []string{"x", "esc-1", "did:key:z6Mk", "A", "é", "a.json", "%2F", "a b", "\n", "", "a/b"} {
					inst := pathParam.ReplaceAllString(p.path, v)
					paths = append(paths, inst, inst+"/", inst+"//", inst+"/more", strings.ToUpper(inst), "/"+inst, inst[:len(inst)/2], inst+"x")
				}
			}
			paths = append(paths, "", "/", "//", "///", "x", "/\xff", "/contracts/\xff/fund")
			for _, path := range paths {
				var want []*route
				for _, p := range tb.patterns {
					if regexp.MustCompile(quotedParams(p.path)).MatchString(path) {
						for _, r := range tb.routes {
							if r.path == p.path {
								want = append(want, r)
							}
						}
					}
				}
				if got := tb.at(path); !slices.Equal(got, want) {
					t.Errorf("at(%q) = %v, want %v", path, keys(got), keys(want))
				}
			}
		})
	}
}

func keys(rs []*route) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.key())
	}
	return out
}

// BenchmarkTable_At is the route lookup CORS makes of every request.
func BenchmarkTable_At(b *testing.B) {
	_, s := fullServer(b)
	b.ReportAllocs()
	for b.Loop() {
		s.routes.at("/contracts/esc-123/fund")
	}
}
