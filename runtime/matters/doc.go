// Package matters is the judgment service of the Judgment Exchange seed
// (delx/judgment-exchange/v1): before a spend, a publication or an
// irreversible action, a requester opens a time-bounded Matter; one assigned
// human or model solver accepts and submits one verdict, checked against the
// Matter's verdict schema (adjudicate's bounded subset); the requester
// settles (a flag: no funds move) or disputes, or the Matter expires.
//
// # Lifecycle
//
//	open --verdict--> judged --settle--> settled
//	open --dispute--> disputed <--dispute-- judged
//	open --deadline--> expired
//
// settled, disputed and expired are terminal. A judged Matter does not
// expire. An open Matter expires when a read (Get, List) or Tick evaluates
// it at or after its deadline, or when a mutation finds it past due: that
// expiry commits even though the mutation itself fails with
// matter_not_open. There is no background timer.
//
// # Principals
//
// Every call carries an Actor: the authenticated principal's tenant, key id,
// roles (requester, solver, operator) and scopes (economic:read,
// economic:private, economic:write). The transport authenticates; this
// package authorises. A Matter belongs to one tenant and another tenant's
// actor gets matter_not_found, never a hint that it exists. In signed mode
// requester_id and solver_id are bound to the actor's key id; an Actor with
// Open set (assay serve --matters-auth open, for local use) takes identities
// from the body and skips role checks.
//
// # Receipts
//
// Every transition signs a receipt (matter_opened, solver_assigned,
// solver_accepted, verdict_submitted, matter_settled, matter_disputed,
// matter_expired) whose subject repeats risk_class and solver_kind and
// carries previous_receipt_hash, the proof.subjectHash of the Matter's
// previous receipt: a chain from the first receipt, which has none.
// Subjects hold hashes of the question, schema, verdict and identities,
// never their values.
//
// # Idempotency
//
// Every mutation takes a key (1 to 256 bytes, the seed's bound), in the
// seed's scopes: open in open:<sha256(tenant)>:<sha256(requester)>, verdict
// in verdict:<sha256(tenant)>:<sha256(solver)>; assign, settle and dispute
// per tenant and caller, accept per tenant and solver; tick per tenant,
// with the calling operator part of the content. The scopes hold no Matter
// id, so the matter_id is content: the same key sent for another Matter is
// a conflict, not a new request. The same content replays the stored
// answer; other content under the same key is idempotency_conflict.
// "Same content" is idem.FingerprintJSON of the operation and the decoded
// request: member order and spacing do not count. Receipts are kept in the
// receipt repository (runtime/receipt), where GET /receipts/{id} serves
// them too.
//
// # The exchange
//
// Beyond v1, a Matter may be a quorum Matter (exchange.go, solvers.go,
// quorum.go, bonds.go, appeal.go, calibration.go): registered solvers with
// declared lineages and conflicts, N seats and an M-of-N rule over sealed
// verdicts (commit, then reveal), stakes and bonds held on the shared
// ledger, appeal of a judged Matter to the escrow court through the Court
// port, and calibration from observed outcomes. v1's routes refuse a quorum
// Matter (quorum_matter) and v1 Matters are unchanged: their JSON and
// receipt subjects carry no exchange fields. docs/exchange.md walks through
// one.
package matters
