package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migration is one versioned change of the schema.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations are applied in version order; a version, once released, never
// changes.
var migrations = []migration{
	{1, "kv", `CREATE TABLE kv (
		key   bytea PRIMARY KEY,
		value bytea NOT NULL
	)`},
}

// addMigration adds a migration, from an init function of a file of this
// package that needs tables of its own.
//
// # Notes
//
// It panics on a version already taken: two files claiming one version is
// a programming error that must not reach a database.
func addMigration(version int, name, sql string) {
	for _, m := range migrations {
		if m.version == version {
			panic(fmt.Sprintf("postgres: migration %d (%s) is already %s", version, name, m.name))
		}
	}
	migrations = append(migrations, migration{version, name, sql})
	slices.SortFunc(migrations, func(a, b migration) int { return a.version - b.version })
}

// migrateLock is the key of the advisory lock that serialises migrations
// across every node opening the database at once ("assay" in ASCII).
const migrateLock = 0x6173736179

// migrate applies the migrations the database lacks, in one transaction
// that holds the advisory lock, so that nodes starting together apply each
// exactly once and none serves a half-migrated schema.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`); err != nil {
			return err
		}
		var have int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
			return err
		}
		if last := migrations[len(migrations)-1].version; have > last {
			return fmt.Errorf("database schema is version %d, newer than this build's %d: upgrade assay", have, last)
		}
		for _, m := range migrations {
			if m.version <= have {
				continue
			}
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
				return err
			}
		}
		return nil
	})
}
