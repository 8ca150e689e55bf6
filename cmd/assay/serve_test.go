package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/assayhq/assay/api"
	"github.com/assayhq/assay/internal/pgtest"
)

func TestServe_Flags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"Help", []string{"-h"}, exitOK},
		{"ErrFlag", []string{"--bogus"}, exitUsage},
		{"ErrArg", []string{"extra"}, exitUsage},
		{"ErrStoreScheme", []string{"--store", "mysql://localhost/x"}, exitUsage},
		{"ErrStoreBadger", []string{"--store", "badger:"}, exitUsage},
		{"ErrStorePostgres", []string{"--store", "postgres:not a url"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if got := doMain(append([]string{"serve"}, tc.args...), nil, &out, &errOut); got != tc.want {
				t.Fatalf("exit %d, want %d: %s", got, tc.want, errOut.String())
			}
		})
	}
}

func TestServe_store(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		for spec, want := range map[string]storeSpec{
			"":                                    {},
			"badger:/var/lib/assay/db":            {"badger", "/var/lib/assay/db"},
			"badger:rel/dir":                      {"badger", "rel/dir"},
			"postgres:postgres://a:pw@db:5432/x":  {"postgres", "postgres://a:pw@db:5432/x"},
			"postgres://a@db/x?sslmode=require":   {"postgres", "postgres://a@db/x?sslmode=require"},
			"postgresql://a@db/x":                 {"postgres", "postgresql://a@db/x"},
			"postgres:postgres:///x?host=/run/pg": {"postgres", "postgres:///x?host=/run/pg"},
		} {
			got, err := parseStore(spec)
			if err != nil || got != want {
				t.Errorf("parseStore(%q) = %+v, %v; want %+v", spec, got, err, want)
			}
		}
		if s := (storeSpec{"postgres", "postgres://a:secret@db/x"}).String(); strings.Contains(s, "secret") {
			t.Errorf("the store's description shows its password: %s", s)
		}
	})
	t.Run("ErrScheme", func(t *testing.T) {
		for _, spec := range []string{"mysql://x", "badger", "badger:", "postgres:", "postgres:mysql://x", "postgres:postgres://", "sqlite:/tmp/x", ":x"} {
			if got, err := parseStore(spec); err == nil {
				t.Errorf("parseStore(%q) = %+v, want an error", spec, got)
			}
		}
	})
	t.Run("Env", func(t *testing.T) {
		// ASSAY_STORE is read, and the flag wins over it.
		t.Setenv("ASSAY_STORE", "fromenv:x")
		var errOut bytes.Buffer
		if got := doMain([]string{"serve"}, nil, io.Discard, &errOut); got != exitUsage || !strings.Contains(errOut.String(), "fromenv") {
			t.Errorf("exit %d: %s", got, errOut.String())
		}
		errOut.Reset()
		if got := doMain([]string{"serve", "--store", "fromflag:x"}, nil, io.Discard, &errOut); got != exitUsage || !strings.Contains(errOut.String(), "fromflag") || strings.Contains(errOut.String(), "fromenv") {
			t.Errorf("exit %d: %s", got, errOut.String())
		}
	})
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

// startServe runs serveWith(cfg) until the test ends and returns its base
// URL.
func startServe(t *testing.T, cfg serveConfig) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() { done <- serveWith(ctx, cfg, &out, &errOut) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(20 * time.Second):
			t.Error("serve did not return after its context ended")
		}
	})
	re := regexp.MustCompile(`on (http://\S+)`)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) { // polls the output
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve returned %v: %s", err, errOut.String())
		default:
		}
	}
	t.Fatalf("server did not start: %s %s", out.String(), errOut.String())
	return ""
}

// createContract creates a contract on base and returns its id.
func createContract(t *testing.T, base string) string {
	t.Helper()
	res, err := http.Post(base+"/contracts", "application/json", strings.NewReader(`{"buyer":"did:a","seller":"did:b","price":3}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var c struct {
		ID string `json:"contract_id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || res.StatusCode != 200 || c.ID == "" {
		t.Fatalf("create: %d %v %+v", res.StatusCode, err, c)
	}
	return c.ID
}

// get returns the status and body of GET base+path.
func get(t *testing.T, base, path string) (int, string) {
	t.Helper()
	res, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestServe_OK(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := startServe(t, serveConfig{Addr: "127.0.0.1:0", Data: dir, MattersAuth: api.MattersSigned})
	createContract(t, base)
	if _, err := os.Stat(filepath.Join(dir, "db")); err != nil {
		t.Errorf("the default store is not badger in DATA/db: %v", err)
	}
}

// TestServe_postgres: two nodes on one PostgreSQL database and one key
// directory serve the same court with the same keys.
func TestServe_postgres(t *testing.T) {
	t.Parallel()
	st, err := parseStore("postgres:" + pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	keys := t.TempDir()
	var nodes []string
	var dirs []string
	for range 2 {
		dir := t.TempDir()
		dirs = append(dirs, dir)
		nodes = append(nodes, startServe(t, serveConfig{Addr: "127.0.0.1:0", Data: dir, Store: st, Keys: keys, MattersAuth: api.MattersSigned}))
	}
	id := createContract(t, nodes[0])
	if code, body := get(t, nodes[1], "/contracts/"+id); code != 200 || !strings.Contains(body, id) {
		t.Errorf("the other node: %d %s", code, body)
	}
	_, k0 := get(t, nodes[0], "/.well-known/assay-keys")
	_, k1 := get(t, nodes[1], "/.well-known/assay-keys")
	if k0 != k1 || !strings.Contains(k0, "did:") {
		t.Errorf("the nodes publish different keys:\n%s\n%s", k0, k1)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "db")); err == nil {
			t.Errorf("a badger store was made in %s", dir)
		}
		if _, err := os.Stat(filepath.Join(dir, "keys")); err == nil {
			t.Errorf("keys were made in the data directory %s, not in --keys", dir)
		}
	}
}

func TestServe_Juror(t *testing.T) {
	t.Parallel()
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

func TestServe_gcPercent(t *testing.T) {
	t.Setenv("GOGC", "")
	for _, tc := range []struct {
		store storeSpec
		want  int
	}{
		{storeSpec{}, badgerGCPercent},
		{storeSpec{Kind: "badger", Target: "/tmp/db"}, badgerGCPercent},
		{storeSpec{Kind: "postgres", Target: "postgres://db"}, 0},
	} {
		if got := gcPercent(tc.store); got != tc.want {
			t.Errorf("gcPercent(%v) = %d, want %d", tc.store, got, tc.want)
		}
	}
	t.Setenv("GOGC", "200")
	if got := gcPercent(storeSpec{}); got != 0 {
		t.Errorf("with GOGC=200 set, gcPercent = %d, want 0 (the operator's)", got)
	}
}
