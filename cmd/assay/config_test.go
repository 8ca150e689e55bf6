package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/assayhq/assay/internal/pgtest"
	"github.com/assayhq/assay/runtime/matters"
	"github.com/assayhq/assay/runtime/principal"
	"github.com/assayhq/assay/runtime/receipt"
	"github.com/assayhq/assay/storage/postgres"
)

// parseConfig registers the configuration flags for parts on a new flag
// set, parses args with env as the environment and returns the Config.
func parseConfig(t *testing.T, env map[string]string, parts configParts, args ...string) (Config, error) {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config := configFlags(fs, func(k string) string { return env[k] }, parts)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return config()
}

func TestConfig_flags(t *testing.T) {
	t.Parallel()
	env := map[string]string{"ASSAY_DATA": "/e/data", "ASSAY_STORE": "badger:/e/db", "ASSAY_KEYS": "/e/keys"}
	all := withStore | withKeys
	t.Run("OK", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			env   map[string]string
			parts configParts
			args  []string
			want  Config
		}{
			{"Defaults", nil, all, nil, Config{Data: "data"}},
			{"Env", env, all, nil, Config{Data: "/e/data", Store: storeSpec{"badger", "/e/db"}, Keys: "/e/keys"}},
			{"FlagsOverEnv", env, all, []string{"--data", "/f/data", "--store", "postgres://a@db/x", "--keys", "/f/keys"},
				Config{Data: "/f/data", Store: storeSpec{"postgres", "postgres://a@db/x"}, Keys: "/f/keys"}},
			{"OneFlagOverEnv", env, all, []string{"--keys", "/f/keys"},
				Config{Data: "/e/data", Store: storeSpec{"badger", "/e/db"}, Keys: "/f/keys"}},
			// the variable's value is not parsed when the flag replaces it
			{"FlagOverBadEnv", map[string]string{"ASSAY_STORE": "mysql://x"}, all, []string{"--store", "badger:/f/db"},
				Config{Data: "data", Store: storeSpec{"badger", "/f/db"}}},
			// a subcommand that uses only the data directory reads no
			// other variable
			{"DataOnly", map[string]string{"ASSAY_STORE": "mysql://x", "ASSAY_KEYS": "/e/keys"}, 0, nil, Config{Data: "data"}},
			{"KeysOnly", map[string]string{"ASSAY_STORE": "mysql://x", "ASSAY_KEYS": "/e/keys"}, withKeys, nil, Config{Data: "data", Keys: "/e/keys"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := parseConfig(t, tc.env, tc.parts, tc.args...)
				if err != nil || got != tc.want {
					t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
				}
			})
		}
	})
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("Err", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			env   map[string]string
			parts configParts
			args  []string
			want  string
		}{
			{"ErrStoreEnv", map[string]string{"ASSAY_STORE": "mysql://x"}, all, nil, `$ASSAY_STORE: unknown store "mysql"`},
			{"ErrStoreFlag", map[string]string{"ASSAY_STORE": "mysql://x"}, all, []string{"--store", "sqlite:/x"}, `--store: unknown store "sqlite"`},
			{"ErrStoreBadger", nil, all, []string{"--store", "badger:"}, "--store: badger: needs a directory"},
			{"ErrStorePostgres", nil, all, []string{"--store", "postgres:not a url"}, "--store: postgres: needs a URL"},
			{"ErrDataEmpty", env, all, []string{"--data", ""}, "--data: needs a directory"},
			{"ErrDataFile", nil, all, []string{"--data", file}, "--data: " + file + " is a file"},
			{"ErrKeysFile", map[string]string{"ASSAY_KEYS": file}, all, nil, "--keys: " + file + " is a file"},
			{"ErrStoreUnused", nil, withKeys, []string{"--store", "badger:/x"}, "flag provided but not defined: -store"},
			{"ErrKeysUnused", nil, withStore, []string{"--keys", "/x"}, "flag provided but not defined: -keys"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				got, err := parseConfig(t, tc.env, tc.parts, tc.args...)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %+v, %v; want an error with %q", got, err, tc.want)
				}
			})
		}
	})
}

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	for _, c := range []Config{
		{Data: "d"},
		{Data: "d", Store: storeSpec{"badger", "/db"}, Keys: "k"},
		{Data: "d", Store: storeSpec{"postgres", "postgres://a@db/x"}},
	} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []Config{
		{},
		{Data: "d", Store: storeSpec{"sqlite", "/x"}},
		{Data: "d", Store: storeSpec{"badger", ""}},
		{Data: "d", Store: storeSpec{"postgres", ""}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: valid, want an error", c)
		}
	}
}

func TestConfig_Open(t *testing.T) {
	t.Parallel()
	t.Run("OKDefaults", func(t *testing.T) {
		c := Config{Data: t.TempDir()}
		db, err := c.OpenStore(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		ring, err := c.OpenKeyring()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"db", filepath.Join(receipt.KeysDir, receipt.KeysFile)} {
			if _, err := os.Stat(filepath.Join(c.Data, p)); err != nil {
				t.Errorf("not in the data directory: %v", err)
			}
		}
		if keys, err := c.ReadKeys(); err != nil || len(keys) != 1 || keys[0].PublicKey != ring.Current().PublicKey {
			t.Errorf("ReadKeys: %+v %v", keys, err)
		}
	})
	t.Run("OKElsewhere", func(t *testing.T) {
		c := Config{Data: t.TempDir(), Store: storeSpec{"badger", filepath.Join(t.TempDir(), "db")}, Keys: t.TempDir()}
		db, err := c.OpenStore(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if _, err := c.OpenKeyring(); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(c.Store.Target); err != nil {
			t.Errorf("the store is not in --store: %v", err)
		}
		if _, err := os.Stat(filepath.Join(c.Keys, receipt.KeysDir, receipt.KeysFile)); err != nil {
			t.Errorf("the keys are not in --keys: %v", err)
		}
		if ents, _ := os.ReadDir(c.Data); len(ents) != 0 {
			t.Errorf("the data directory is not empty: %v", ents)
		}
	})
}

func TestKeys_keysDir(t *testing.T) {
	data, keys := t.TempDir(), t.TempDir()
	t.Setenv("ASSAY_DATA", data)
	code, out, stderr := runWithStdin(t, "", "keys", "rotate", "--keys", keys)
	if code != exitOK || !strings.Contains(stderr, "first key") || !strings.Contains(stderr, keys) {
		t.Fatalf("rotate: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(keys, receipt.KeysDir, receipt.KeysFile)); err != nil {
		t.Errorf("rotate --keys did not write there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(data, receipt.KeysDir)); err == nil {
		t.Errorf("rotate --keys wrote keys in the data directory")
	}
	if code, _, stderr := runWithStdin(t, "", "keys", "list"); code != exitNo || !strings.Contains(stderr, "no keys") {
		t.Errorf("list without --keys: exit %d: %s", code, stderr)
	}
	t.Setenv("ASSAY_KEYS", keys)
	if code, listed, stderr := runWithStdin(t, "", "keys", "list"); code != exitOK || listed != out {
		t.Errorf("list with $ASSAY_KEYS: exit %d: %s\n%s\nwant:\n%s", code, stderr, listed, out)
	}
	for _, args := range [][]string{{"keys", "list", "--store", "badger:/x"}, {"keys", "rotate", "--data", ""}} {
		if code, _, stderr := runWithStdin(t, "", args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
}

// principalArgs are the flags of assay principals add for the key id.
func principalArgs(id string) []string {
	return []string{"--key-id", id, "--public-key", base64.StdEncoding.EncodeToString(make([]byte, 32)),
		"--tenant", "acme", "--roles", "requester", "--scopes", "economic:read"}
}

func TestPrincipals_config(t *testing.T) {
	t.Parallel()
	t.Run("OKBadger", func(t *testing.T) {
		data := t.TempDir()
		if code, _, stderr := runWithStdin(t, "", append([]string{"principals", "add", "--data", data}, principalArgs("p1")...)...); code != exitOK {
			t.Fatalf("add: exit %d: %s", code, stderr)
		}
		if code, out, stderr := runWithStdin(t, "", "principals", "list", "--data", data); code != exitOK || !strings.Contains(out, `"p1"`) {
			t.Fatalf("list: exit %d: %s %s", code, out, stderr)
		}
		if _, err := os.Stat(filepath.Join(data, "db")); err != nil {
			t.Errorf("the default store is not badger in DATA/db: %v", err)
		}
		if _, err := os.Stat(filepath.Join(data, receipt.KeysDir)); err == nil {
			t.Errorf("principals made signing keys")
		}
	})
	t.Run("ErrUsage", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		for _, args := range [][]string{
			{"principals", "list", "--data", data, "extra"},
			{"principals", "list", "--data", data, "--store", "bogus:x"},
			{"principals", "list", "--data", data, "--store", "postgres:not a url"},
			{"principals", "list", "--data", data, "--keys", data},
			{"principals", "list", "--data", ""},
		} {
			if code, _, stderr := runWithStdin(t, "", args...); code != exitUsage {
				t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, stderr)
			}
		}
		if _, err := os.Stat(data); err == nil {
			t.Errorf("a refused command made the data directory")
		}
	})
}

// TestPrincipals_postgres: principals added with --store postgres:URL are
// in that database, where servers on it read them.
func TestPrincipals_postgres(t *testing.T) {
	dbURL := pgtest.URL(t)
	data := t.TempDir()
	t.Setenv("ASSAY_DATA", data)
	if code, _, stderr := runWithStdin(t, "", append([]string{"principals", "add", "--store", "postgres:" + dbURL}, principalArgs("p1")...)...); code != exitOK {
		t.Fatalf("add: exit %d: %s", code, stderr)
	}
	t.Setenv("ASSAY_STORE", "postgres:"+dbURL)
	if code, _, stderr := runWithStdin(t, "", append([]string{"principals", "add"}, principalArgs("p2")...)...); code != exitOK {
		t.Fatalf("add with $ASSAY_STORE: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runWithStdin(t, "", "principals", "revoke", "--key-id", "p2"); code != exitOK {
		t.Fatalf("revoke: exit %d: %s", code, stderr)
	}
	code, out, stderr := runWithStdin(t, "", "principals", "list")
	var listed struct{ Principals []matters.Principal }
	if code != exitOK || json.Unmarshal([]byte(out), &listed) != nil || len(listed.Principals) != 2 {
		t.Fatalf("list: exit %d: %s %s", code, out, stderr)
	}
	if ents, _ := os.ReadDir(data); len(ents) != 0 {
		t.Errorf("principals wrote in the data directory: %v", ents)
	}

	// Read the database without the command's configuration.
	db, err := postgres.Open(context.Background(), dbURL, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	svc := principal.New(db, nil)
	p1, err := svc.Principal(context.Background(), "p1")
	if err != nil || p1.Tenant != "acme" || !p1.RevokedAt.IsZero() {
		t.Errorf("p1 in the database: %+v %v", p1, err)
	}
	if p2, err := svc.Principal(context.Background(), "p2"); err != nil || p2.RevokedAt.IsZero() {
		t.Errorf("p2 is not revoked in the database: %+v %v", p2, err)
	}
}
