// Package escrow is the escrow court: contracts between a buyer and a seller
// agent, escrowed funds, delivery, acceptance or dispute, and the signed
// verdict receipt that settles every case. Its routes, fields, states and
// status codes follow the Lex Automata seed (shared/seeds/003_…); api/
// serves them over HTTP.
//
// # States
//
//	created -> funded -> delivered -> resolved            (accept, or a decided dispute)
//	                               -> escalated -> resolved (a dispute the jury could not decide)
//	funded  -> resolved                                   (deliver_by passed: refund)
//	delivered -> resolved                                 (review_window passed: release)
//
// The seed draws "delivered -> accepted|disputed -> resolved". Accepting and
// disputing are decisions, not resting places: each commits its receipt and
// payout in the same transaction that records it, so a contract goes straight
// from delivered to resolved, and its verdict, tier and receipts say how. The
// one resting state between is escalated: a dispute that nothing
// deterministic failed and no juror decided, held until an operator resolves
// it.
//
// # Who may act, and with whose money
//
// Every mutation takes the request's principal.Actor, and the court
// decides on the contract itself (party.go): in a signed court a party
// that can prove who it is (a did:key, a registered principal) makes its
// own mutations; a contract in a currency a rail backs (rail.USDMicro) is
// funded from the buyer's own wallet, and each of its steps is made by
// its party, in any mode. A notional currency (the seed's credits) is
// minted for its buyer (rail.MintAccount), never from an account that
// deposits move through, and never withdrawn.
//
// # One transaction per mutation
//
// Every mutation is one store.Update that commits the contract's new state,
// its ledger postings, its signed receipt and the receipt indexes, the
// reputation inputs, one activity event and the idempotency record, or none
// of them. What is slow (the adjudication: checkers in the sandbox, the
// jury) runs first, on a consistent read; the transaction then reads the
// contract again and refuses with 409 when another request got there first.
// Since the store is serialisable and retries a transaction that lost a
// conflict, of any number of concurrent accepts and disputes on one case
// exactly one commits and the others see the resolved state.
//
// The transaction functions have no effects outside the transaction: times,
// contract ids and activity sequence numbers are taken before the first
// attempt; receipt ids are derived from the contract id and the receipt's
// purpose; Ed25519 signatures are deterministic.
//
// # Records
//
// The court's repository (repo.go) owns every key it reads and writes and
// their encoding: a contract is one record (its terms, state, delivery and
// adjudication), which each mutation reads and writes once; the activity
// log and the reputation counters have keys of their own; the ledger and
// receipts are their packages' repositories. The service code deals in
// contracts, never in keys. storage/RATIONALE.md says why.
//
// # No hot keys
//
// A case touches only its own keys, so concurrent cases commit in the same
// group fsync without conflicting: ledger legs are append-only, reputation
// counters are split into shards picked by contract id, and activity events
// are keyed by a sequence number that the Service assigns in memory (badger
// holds the data directory for one process; it resumes from the last key on
// open). Sequence numbers taken by requests that then failed are skipped, so
// total_seq is the highest sequence number, not a count.
//
// # Reading the seed where it is open
//
//   - Reputation counts the buyer's accept and dispute verdicts. An accept
//     is a positive for the seller (the buyer judged the delivery good) and
//     counts nothing for the buyer. A dispute verdict (tier0, tier1-jury or
//     an operator's resolution of an escalated dispute) that releases is a
//     positive for the seller and a negative for the buyer (the frivolous
//     dispute); one that refunds is a negative for the seller and a
//     positive for the buyer. A lapsed deadline or review window decides
//     nothing and counts for no one. The seed's example: a seller with one
//     accepted contract and one lost dispute has as_seller sample_count 2,
//     positive 1, negative 1, score 0.5, confidence 0.33, standing WATCH.
//   - score = (positive+1)/(positive+negative+2); confidence =
//     n/(n+4), which gives the seed's 0.33 for two samples; both are shown
//     rounded to two places, standings are computed unrounded. NEW: no
//     sample; BANNED: at least 3 lost and score < 0.40; GOOD: score >= 0.70;
//     WATCH otherwise.
//   - The top-level standing is the seed example's: BANNED when either role
//     is banned, NEW with no history in either role, GOOD otherwise (the
//     seed shows GOOD beside an as_seller WATCH). POST /contracts refuses a
//     seller whose top-level standing is BANNED.
//   - deadline_tick is recorded and hashed but not enforced, as the seed
//     says; it defaults to 1000 as the seed's example shows.
//   - contract_hash is the SHA-256 of the RFC 8785 form of the terms:
//     contract_id, buyer, seller, price, currency, acceptance (canonical),
//     deadline_tick, and deliver_by and review_window when set.
//     evidence_hash is the SHA-256 of the RFC 8785 form of
//     {"deliverable": …, "evidence": …}.
//   - An escalated dispute answers a signed receipt with verdict
//     "escalated" and an empty payout; the operator's resolution issues the
//     final receipt, tier "operator".
package escrow
