// Package market is the artifact market of the SOLVED seed
// (shared/seeds/004_…): sellers list solved artifacts, buyers search by
// fingerprint, buy, and challenge inside a window; trust is numbers.
//
// # Money
//
// Wallets are ledger accounts ("agent:<did>") in integer micro-USD
// (Currency). A purchase moves price + 3% from the buyer's wallet into a
// hold ("hold:market:<purchase>") and delivers the artifact at once; when
// the challenge window closes (1 h at levels 1 and 3; at level 2, 24 h
// under $5 and 72 h from $5) the hold pays the seller the price and the
// platform the fee. A refund returns price and fee. A level-2 bond of
// max(20% x price, $0.50) moves from the seller's wallet to
// "hold:bond:<listing>" at publication, back on clean retirement once no
// window is open, or to an upheld challenger. The fee rounds half up to
// the micro-USD; nothing else rounds, and amounts with more than six
// fractional digits are refused. Settlement is lazy: reads and mutations
// settle what is due by the injected clock, and Tick does it for a
// scheduler. Concurrent debits of one wallet conflict on a counter key,
// so the store serialises them and no wallet is overdrawn.
//
// # Checkers and levels
//
// A listing with a checker (Python source, or a wasm checker's SHA-256 in
// the court's registry) is replayed in the sandbox before publication: a
// pass lists it at level 1, anything else refuses it. Sample replays (Tick)
// and buyer-requested replays that pass count toward level 3 (3 passes,
// no failure); a failed sample pulls the listing and refunds every
// purchase whose window is open. A challenge replays the checker with the
// challenger's evidence at /in/evidence: a failing replay upholds it at
// once; a passing replay (or a level-2 listing) leaves it to the operator,
// and the purchase does not settle meanwhile. Every replay's outcome,
// without its wall time, is in a signed receipt.
//
// # One transaction per mutation
//
// As in the escrow court: the checker replay runs first on a snapshot;
// the state change, ledger postings, signed receipts and idempotency
// record (scope "market") then commit in one transaction that re-checks
// the state.
package market
