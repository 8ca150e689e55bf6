package main

import (
	"bytes"
	"net"
	"regexp"
	"testing"
)

// TestPrintServing: the first line names the three services and ends with
// the URL they are served on; an unspecified host is named localhost.
func TestPrintServing(t *testing.T) {
	first := regexp.MustCompile(`^assay: serving the escrow court, the artifact market and judgment matters on (http://\S+)$`)
	for _, tc := range []struct {
		name string
		addr net.Addr
		url  string
		all  bool
	}{
		{"OKLoopback", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080", false},
		{"OKEvery", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://localhost:8080", true},
		{"OKEvery4", &net.TCPAddr{IP: net.IPv4zero, Port: 9}, "http://localhost:9", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printServing(&b, tc.addr, true, "./data", "badger", "KEY")
			lines := bytes.Split(bytes.TrimSuffix(b.Bytes(), []byte("\n")), []byte("\n"))
			if len(lines) != 2 {
				t.Fatalf("printed %q", b.String())
			}
			if m := first.FindSubmatch(lines[0]); m == nil || string(m[1]) != tc.url {
				t.Fatalf("first line %q, want the services on %s", lines[0], tc.url)
			}
			for _, want := range []string{"/contracts", "/market", "/mcp", "/api/v1/economic/matters", "/console", "/metrics", "data ./data", "store badger", "court key KEY"} {
				if !bytes.Contains(lines[1], []byte(want)) {
					t.Errorf("second line %q lacks %q", lines[1], want)
				}
			}
			if got := bytes.Contains(lines[1], []byte("every interface")); got != tc.all {
				t.Errorf("second line %q: every interface %v, want %v", lines[1], got, tc.all)
			}
		})
	}
}
