// Package storage implements the store.Store contract of package
// runtime/store on badger, the embedded default: one process, one data
// directory.
//
// # Durability
//
// Update returns nil only once its transaction is on disk: a transaction
// that returned nil survives a SIGKILL or a power cut. Badger's own
// SyncWrites would sync once per transaction, so that concurrent commits
// queue behind each other's syncs; instead transactions commit unsynced and
// wait for a group sync that started after their commit (sync.go), which
// fdatasyncs badger's write-ahead logs (*.mem) and value logs (*.vlog)
// through their own descriptors, kept open from sync to sync, without
// taking badger's lock; only the logs that may hold something new (the
// newest write-ahead log; an older one once after its rotation; the value
// logs after a value big enough to go there), since an fdatasync of a file
// with nothing new still flushes the disk; and it reads the data
// directory only when the logs may have changed (a rotation, a big value),
// since a listing costs in proportion to the store's tables. One sync serves every
// transaction waiting, and a transaction that finds no sync running starts
// one at once: no timer, no idle wait when few write. A transaction that wrote nothing waits for
// none. After a sync fails, the store refuses further writes.
//
// DiskFloor measures what one such sync costs on the disk itself: a 4 KiB
// write made durable by fdatasync, the floor every acknowledged write
// stands on (assay bench court reports it beside its figures).
//
// # Key layout
//
// Keys are UTF-8 paths whose first segment names the owner. Each service's
// repository owns its prefixes and the encoding of their values (JSON
// unless said otherwise; storage/RATIONALE.md says why some are CBOR):
//
//	escrow/contract/<id>                 a contract's record, CBOR (runtime/escrow/repo.go): its terms, state, delivery when at most 4 KiB, and the adjudication of its dispute; a record written before records held them is the contract's JSON, read as it stands
//	escrow/delivery/<id>                 a delivery larger than 4 KiB (and every delivery of a contract stored before records held them), as delivered
//	escrow/adjudication/<id>             legacy: the adjudication of a dispute decided before records held them; read, never written
//	escrow/activity/<seq:020d>-<node>    one event of the court's activity log, CBOR (JSON before) (seq assigned in memory, resumed on open; node random per process)
//	escrow/reputation/<did>/<role>/<shard:02d>  dispute counts for seller|buyer, split into 16 shards by contract
//	escrow/negative/<did>                "1": the agent has lost a decision, so Create reads its reputation for a ban
//	escrow/meta/negatives                "1": the marks above were made for the reputation recorded before them
//	receipt/<id>                         a signed receipt of any service (runtime/receipt's repository): the court's, the market's and the Matters'; its bytes as signed, not HTML-escaped; id = hex of the first 8 bytes of sha256("<contract>/<purpose>"), sha256("market/<subject>/<purpose>") or sha256("matters/<matter>/<seq>")
//	receipt-by-agent/<did>/<unixnano:020d>-<id>  index: the receipts an agent was party to (the court's buyer and seller, the market's agents)
//	ledger/entry/<account>/<transfer>/<leg>  one leg of a transfer (append-only): a CBOR array of what the key does not say (its JSON before, read as it stands)
//	ledger/shard/<account>/<currency>/<n>    what the account's legs in the currency add up to, for transfers whose id hashes to n (0-511): the balance bound
//	ledger/lock/<account>                a counter every debit of the account rewrites (ledger.Lock), whichever service debits it, so that they conflict
//	idem/<scope>/<key>                   a stored response for an idempotency key (escrow: idem/escrow/<key>)
//	checker/<sha256>                     checker metadata (checkers.InfoKey); checker-bytes/<sha256> its bytes (checkers.BytesKey), the court's uploads and the market's Python sources alike: checkers.Registry's layout
//	quota/upload/<counted>               an uploader's upload quota (runtime/replays): bytes left and when; <counted> is "agent:<did>", "operator" or "addr:<address>"
//	matters/matter/<id>                  a judgment Matter (private projection)
//	matters/tenant/<sha256(tenant)>/<id> index: every Matter of a tenant
//	matters/open/<sha256(tenant)>/<id>   index: a tenant's open Matters
//	matters/receipt/<id>/<seq:04d>       legacy: a Matter's receipts written before they moved to receipt/<id> (HTML-escaped); read, repaired, when receipt/<id> has none, never written
//	matters/principal/<key id>           a registered signing principal, of any service (runtime/principal; the prefix kept from when matters alone had principals)
//	matters/nonce/<key id>/<nonce>       a signature nonce already used, of any service; a did:key signer's under its DID
//	matters/nonce-at/<unix:020d>/<key id>/<nonce>  index: nonces by created, pruned past twice the clock skew
//	principal/apikey/<id>                an issued API key: its agent, the SHA-256 of its token, revocation
//	matters/solver/<sha256(tenant)>/<solver id>  a registered exchange solver (kind, lineage, qualifications, conflicts)
//	matters/seat/<sha256(tenant)>/<solver id>/<matter>  index: the quorum Matters a solver has a seat of (its calibration)
//	idem/matters:<op>:<scope…>/<key>     the judgment service's idempotency scopes
//	market/listing/<id>                  a market listing; market/artifact/<id> its artifact, market/search/<id> its tokens
//	market/fp/<fingerprint>/<id>         index: listings by problem fingerprint
//	market/tok/<token>/<id>              index: active listings by search token -> the listing's token count; market/tok-index its build state
//	market/checker/<sha256>              legacy: a python checker's source as the market kept it before the one registry; still read (checkers.Registry), never written
//	market/purchase/<id>                 a purchase; market/bought/<listing>/<buyer> -> its id
//	market/open/<listing>/<purchase>     index: purchases whose window is open
//	market/due/<unixnano:020d>/<purchase>  index: when a held purchase settles
//	market/challenge/<id>                a challenge; market/evidence/<id> its evidence
//	market/agent/<did>                   an agent's market record (first seen, sales, challenges lost)
//	market/payback/<purchase>            a refund owed to an x402 payer, and once paid its reference
//	rail/x402/nonce/<payer>/<nonce>      an EIP-3009 authorization nonce, claimed once across restarts and nodes
//	rail/x402/payment/<ref>              a settled x402 payment; rail/x402/payer/<keccak256(agent)> an agent's last payer address
//	rail/x402/out/<from>/<nonce>         an authorization the operator signed to pay back or out, kept so that a retry pays once
//	facilitator/nonce/<payer>/<nonce>    the local facilitator's (assay facilitator) used nonces, in its own store
//	market/confirm/<listing>/<identity>  a buyer's confirmation of a listing toward level 3 (one per distinct buyer)
//	market/total                         the money in the market (micro-USD, deposits less withdrawals); deposits and withdrawals rewrite it
//	idem/market:<op>:<sha256(agent)>/<key>  the market's idempotency scopes, by operation and acting agent
//	memo/<key>                           a memoised checker outcome (checkers.Memo, runtime/replays.MemoStore); key: checkers.Key in hex
//	tlog/pending/<unixnano:020d>-<id>    a receipt's transparency log entry (receipt.Entry), by when it was signed, written with the receipt (receipt.Put), deleted once integrated
//	tlog/state                           the log's tree as integrated: {"size", "hash"} (runtime/translog)
//	tlog/lease                           which node integrates, until when: {"node", "until"}
//	tlog/checkpoint                      the published checkpoint: a signed note, with the witnesses' cosignatures
//	tlog/tile/<L:02d>/<N:020d>           a C2SP tlog-tiles tile: up to 256 hashes, as wide as the tree has it
//	tlog/entry/<N:020d>/<i:03d>          the entry at index N*256+i (entry bundle N is their concatenation, each length-prefixed)
//	tlog/receipt/<id>/<16 hex>           index: the entry of receipt id whose record hash starts so (each entry is logged once)
//	tlog/superseded/<id>/<index:020d>    index: the entry at index supersedes receipt id -> its receipt id
//	tlog/witness/<name>                  the size a witness last cosigned
//	queue/job/<queue>/<id>               a job of the badger job queue (Queue), its lease and its result; PostgreSQL keeps them in the table assay_queue
//	queue/wait/<queue>/<order:020d>/<id>  index: the queue's jobs not done, in enqueue order
//
// DIDs and idempotency keys are path-escaped (url.PathEscape) in keys.
// The market's receipts written before the repository kept its byte policy
// hold <, > and & escaped in credentialSubject under receipt/<id>;
// receipt.Get serves them repaired (receipt.Repair), so no migration runs.
//
// Keys are never reused; ids are unique. A value's JSON shape belongs to
// the package that owns the prefix.
package storage
