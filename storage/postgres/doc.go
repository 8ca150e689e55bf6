// Package postgres implements the store.Store contract of package
// runtime/store on PostgreSQL, so that several Assay nodes can serve the
// same courts, markets and matters from one database. The embedded badger
// store (package storage) stays the default for one node.
//
// # Opening
//
//	s, err := postgres.Open(ctx, "postgres://assay@db.internal/assay", postgres.Options{})
//	...
//	defer s.Close()
//
// Open connects a pool (pgxpool; the URL's pool_max_conns and other pgx
// parameters apply), applies the schema migrations that the database does
// not have yet and checks the server's durability settings. Several nodes
// may open the same database at once: migrations run under a transaction
// advisory lock, each exactly once. Other code of this package that needs
// tables of its own (the job queue) adds migrations with addMigration.
//
// # Schema
//
// One table holds every key of the layout that package storage documents:
//
//	kv(key bytea PRIMARY KEY, value bytea NOT NULL)
//
// Keys are bytea, not text, so that they order byte by byte exactly as Go
// strings and badger's keys do, and so that any byte (0x00, invalid UTF-8)
// is a valid key. A key is at most MaxKey bytes: PostgreSQL's B-tree
// refuses longer index entries. schema_migrations records the migrations
// applied.
//
// # Transactions
//
// Update runs fn in a SERIALIZABLE transaction and runs it again, a
// bounded number of times with a growing, jittered pause, when PostgreSQL
// reports a serialisation failure (40001) or a deadlock (40P01), wherever
// in the transaction that happens: so a rule such as "one verdict per
// Matter" holds across every node on the database, as it does inside one
// process on badger. View runs fn in a REPEATABLE READ READ ONLY
// transaction: one snapshot, no predicate locks.
//
// A transaction takes no round trip of its own: its BEGIN is sent with its
// first read, writes wait for the next read or the commit, and each
// exchange sends everything waiting in one batch, so that a transaction
// that only writes is one round trip (BEGIN, writes, COMMIT). A
// transaction that knows what it will read names it first
// (store.Tx.GetMany): the reads go with its BEGIN in one batch and are kept
// for its later reads of the same keys (until it writes one), so that each
// step of a court case reads its contract, its ledger legs and counters and
// its reputation counters in one round trip, and a market purchase its
// listing, the buyer's wallet and the artifact. A read made ahead is an
// ordinary SELECT of the transaction, locked and checked for
// serialisation as any other. A View that has read takes one more round
// trip, its COMMIT.
//
// SERIALIZABLE locks the B-tree pages a read visits, so that transactions
// touching different keys on one page may conflict and run again: rare in a
// table of some size with random ids (BenchmarkReadModifyWrite measures
// retries/op), frequent in a nearly empty one, and with ids made in order,
// whose keys share the newest pages. So the services on PostgreSQL make
// random ids (cmd/assay gives them ident.RandomID).
//
// Scan reads the range a prefix covers in pages (keyset pagination, no
// cursor held open), so fn may call Get and Set while it scans.
//
// # Durability
//
// Update returns nil only after PostgreSQL acknowledged the COMMIT. Open
// refuses a server with fsync off, and turns synchronous_commit on for every
// connection of the pool where the server or role has it off; stronger
// settings (remote_write, remote_apply) are kept.
package postgres
