package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestServe_Flags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"Help", []string{"-h"}, exitOK},
		{"ErrFlag", []string{"--bogus"}, exitUsage},
		{"ErrArg", []string{"extra"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if got := doMain(append([]string{"serve"}, tc.args...), nil, &out, &errOut); got != tc.want {
				t.Fatalf("exit %d, want %d: %s", got, tc.want, errOut.String())
			}
		})
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServe_OK(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- serve(ctx, "127.0.0.1:0", t.TempDir(), &out, io.Discard) }()
	re := regexp.MustCompile(`on (http://\S+)`)
	var base string
	for deadline := time.Now().Add(20 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("server did not start: %s", out.String())
	}
	res, err := http.Post(base+"/contracts", "application/json", strings.NewReader(`{"buyer":"did:a","seller":"did:b","price":3}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("create: %d", res.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not return after its context ended")
	}
}

func TestServe_Juror(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	t.Run("OK", func(t *testing.T) {
		j, name, model, err := newJuror(env(map[string]string{"ASSAY_JURY_BASE_URL": "http://127.0.0.1:9/v1", "ASSAY_JURY_MODELS": "m1,m2,m3"}))
		if err != nil || j == nil || name == "" || model != "m1,m2,m3" {
			t.Fatalf("%v %q %q %v", j, name, model, err)
		}
	})
	t.Run("None", func(t *testing.T) {
		j, name, _, err := newJuror(env(nil))
		if err != nil || j != nil || name != "" {
			t.Fatalf("%v %q %v", j, name, err)
		}
	})
}
