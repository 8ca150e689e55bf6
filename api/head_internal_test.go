package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRouteTable_Head: every GET route of the table, its usage notes
// included, answers HEAD as it answers GET (the status and the media type)
// with no body, and Allow names HEAD among its methods; a path that is no
// route refuses HEAD as it refuses GET.
func TestRouteTable_Head(t *testing.T) {
	app, s := fullServer(t)
	do := func(method, path string) (*http.Response, []byte) {
		t.Helper()
		res, err := app.Test(httptest.NewRequest(method, path, nil), -1)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		b, err := io.ReadAll(res.Body)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return res, b
	}
	n := 0
	for _, r := range s.routes.routes {
		if r.method != http.MethodGet {
			continue
		}
		n++
		path := pathParam.ReplaceAllString(r.path, "x1")
		t.Run(r.key(), func(t *testing.T) {
			get, body := do(http.MethodGet, path)
			head, none := do(http.MethodHead, path)
			if head.StatusCode != get.StatusCode {
				t.Errorf("HEAD %s: %d, GET %d (%.200s)", path, head.StatusCode, get.StatusCode, body)
			}
			if h, g := head.Header.Get("Content-Type"), get.Header.Get("Content-Type"); h != g {
				t.Errorf("HEAD %s: Content-Type %q, GET %q", path, h, g)
			}
			if len(none) != 0 {
				t.Errorf("HEAD %s answered a body: %.200s", path, none)
			}
			if allow := s.routes.allow(path); !strings.Contains(allow, http.MethodHead) {
				t.Errorf("Allow of %s is %q, without HEAD", path, allow)
			}
		})
	}
	if n < 20 {
		t.Fatalf("%d GET routes: the table is not served", n)
	}
	for _, path := range []string{"/replays/x1", "/Contracts", "/health/"} {
		if res, _ := do(http.MethodHead, path); res.StatusCode != http.StatusNotFound {
			t.Errorf("HEAD %s, which is no route: %d", path, res.StatusCode)
		}
	}
}
