// Package pgtest gives tests a throwaway PostgreSQL database: one fresh,
// empty database per test, created from the server that the environment
// variable ASSAY_TEST_POSTGRES names and dropped when the test ends. Tests
// that need PostgreSQL skip when the variable is unset; .ci/run starts a
// cluster and sets it.
//
// To run them by hand, start any PostgreSQL 13 or later that the tests may
// create databases on, for example Debian's postgresql-15 as a throwaway
// cluster on a loopback port:
//
//	mkdir /tmp/pg && chown postgres: /tmp/pg
//	runuser -u postgres -- /usr/lib/postgresql/15/bin/initdb -D /tmp/pg/data -U postgres --auth=trust
//	runuser -u postgres -- /usr/lib/postgresql/15/bin/pg_ctl -D /tmp/pg/data -l /tmp/pg/log -w start \
//	    -o "-c listen_addresses=127.0.0.1 -p 55432 -k /tmp/pg"
//	export ASSAY_TEST_POSTGRES=postgres://postgres@127.0.0.1:55432/postgres?sslmode=disable
//
// It is for tests only: production code never imports it.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the environment variable holding the base URL: a PostgreSQL
// connection URL of a role that may create databases.
const Env = "ASSAY_TEST_POSTGRES"

// URL returns the connection URL of a new, empty database for tb, dropped
// (with any connections still open to it) when tb and its cleanups
// registered after this call are done. Without ASSAY_TEST_POSTGRES it skips
// tb.
//
// # Errors
//
// A base URL that does not parse, or a server that refuses the CREATE
// DATABASE, fails tb: a configured server that does not work is a failure,
// not a skip.
func URL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(Env)
	if base == "" {
		tb.Skip("needs PostgreSQL: set " + Env + "=postgres://... to run; .ci/run does")
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("pgtest: %s=%q is not a postgres:// URL", Env, base)
	}
	// The base URL may carry pgxpool's parameters (pool_max_conns) for the
	// code under test; a plain connection would send them to the server.
	admin := *u
	q := admin.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	admin.RawQuery = q.Encode()
	var b [8]byte
	rand.Read(b[:])
	name := "assay_test_" + hex.EncodeToString(b[:])
	exec(tb, admin.String(), "CREATE DATABASE "+name)
	tb.Cleanup(func() { exec(tb, admin.String(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	u.Path = "/" + name
	return u.String()
}

// exec runs one statement on the base database, failing tb on error.
func exec(tb testing.TB, base, sql string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("pgtest: connect to %s: %v", redact(base), err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		tb.Fatalf("pgtest: %s: %v", sql, err)
	}
}

// redact hides a password in u.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}
