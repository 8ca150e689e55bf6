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
// # Rails paid per request (x402)
//
// On a rail that is paid per request (rail.Asker: runtime/rail/x402) a
// purchase the buyer's wallet cannot cover, and every deposit, is paid by
// the request's own payment (PurchaseRequest.Pay, AmountRequest.Pay, set
// by the transport from its payment header): without one it answers the
// rail's *rail.PaymentRequired. The payment is collected before the
// transaction, once what the transaction would refuse has been refused,
// and posted rail -> wallet with the rail's reference in the memo; a sale
// refused after all pays it back at once. The purchase remembers the
// rail and the payer's address. Its refund goes from the hold to the
// wallet and on to the rail's account in the refund's transaction, which
// records a payback owed (market/payback/<purchase>); PayBack then pays it
// on the rail, to the payer, and signs an AssayRailRefund receipt with the
// rail's reference of the refund. Mutations that refund call PayBack after
// they commit, and Tick retries what is still owed. A withdrawal waits in
// "hold:withdraw:<id>" until the rail has paid it out, so that the posting
// to the rail's account carries the payout's reference.
//
// # Bounds on money
//
// No amount and no balance can overflow:
//
//   - one deposit, withdrawal, price or recompute estimate is at most
//     MaxAmount, $1,000,000,000 (more is 400 amount_too_large);
//   - deposits bring a wallet to at most MaxWallet, $5,000,000,000 (409
//     wallet_limit_exceeded). Money the market itself pays into a wallet
//     (sale proceeds, refunds, bonds) is never refused, since refusing it
//     would strand it in a hold;
//   - all the money in the market (deposits less withdrawals, kept under
//     "market/total", which deposits and withdrawals read and rewrite so
//     that the store serialises them) is at most MaxTotal,
//     $1,000,000,000,000 (409 market_limit_exceeded).
//
// So every wallet, hold and the platform's account sits between 0 and
// MaxTotal, a ninth of int64, and inside the ledger's own bounds
// (ledger.MaxAmount per posting, ledger.MaxBalance per account), which
// constants in money.go check at compile time. Arithmetic on money is
// checked (Add); Fee and Bond have no intermediate overflow for any int64
// price; sums over history in Stats refuse to wrap. A refused posting
// changes nothing.
//
// # Text
//
// Agent ids follow the one id grammar of every service (runtime/ident):
// valid UTF-8, at most 256 bytes, no whitespace, control, format or bidi
// characters, no '/', '\' or '*', not "." or "..". A title is one line of
// text; problem statements, license terms, purposes, reasons and queries
// are text (valid UTF-8, no control character but tab and newline, no
// bidi control), each bounded. Nothing is repaired: bad text is refused
// with a coded 400 and changes nothing.
//
// An artifact is any JSON value of valid UTF-8 (EncodingJSON, the
// default), or a JSON string of standard base64 sent with "encoding":
// "base64" (EncodingBase64) for bytes that are not text. The checker sees
// a string's contents, any other value's JSON text, or the decoded bytes;
// artifact_sha256 is the hash of those bytes. The buyer gets the artifact
// back in the form it was published in, with "encoding" naming it.
// Artifact bytes that are not valid UTF-8 are refused at publication (400
// invalid_artifact), so no buyer is charged for a response that a JSON
// parser would refuse.
//
// # Checkers and levels
//
// A listing with a checker (Python source, or a wasm checker's SHA-256 in
// the court's registry) is replayed in the sandbox before publication: a
// pass lists it at level 1, anything else refuses it. A sample replay
// (Tick) or a buyer-requested replay (Replay) that fails pulls the
// listing and refunds every purchase whose window is open. A challenge
// replays the checker with the challenger's evidence at /in/evidence: a
// failing replay upholds it at once; a passing replay (or a level-2
// listing) leaves it to the operator, and the purchase does not settle
// meanwhile. Every replay's outcome, without its wall time, is in a
// signed receipt.
//
// # Level 3: what "independent" means
//
// A level-1 listing becomes level 3, "statistically confirmed", once
// SamplesForLevel3 (3) distinct independent buyers have confirmed it and
// no replay failed. A passing replay confirms a listing only when it
//
//   - was asked for by an agent that purchased the listing;
//   - ran on the artifact that purchase delivered (its artifact_sha256);
//   - is by a buyer who is not the seller: neither the seller's agent id
//     nor an id with the seller's identity (Config.Identity);
//   - is not by a house agent (HousePrefix, "g17-") when the seller is a
//     house agent too;
//   - and is that buyer's first confirmation of the listing: a buyer
//     counts once however many replays it asks for.
//
// The market's own samples count as passes (replays_passed), never as
// confirmations. Checkers are deterministic, so a replay is usually
// answered from the memo of an earlier identical run; its answer and
// receipt say so (memo_hit), and it is recorded as that buyer's one
// confirmation: what level 3 counts is distinct buyers who received the
// artifact and had it checked, not distinct runs. A listing's
// confirmed_buyers says how many there were; marketplace_stats'
// buyer_confirmations sums them over active listings. A listing that a
// store written under the earlier rule (any three passing replays) made
// level 3 reads as level 1 until buyers confirm it.
//
// The limit: agents are not authenticated yet, so a buyer is known only
// by its agent id, and one person can hold several agent ids (and pay for
// several purchases) to confirm a listing of their own. Independence by
// agent id raises the price of a false level 3 to three purchases under
// three names; it does not prove three people. Config.Identity is the
// seam where the authenticated identity behind a request takes the agent
// id's place once agents are authenticated.
//
// # One transaction per mutation
//
// As in the escrow court: the checker replay runs first on a snapshot;
// the state change, ledger postings, signed receipts and idempotency
// record then commit in one transaction that re-checks the state. An
// idempotency key lives in the scope of its operation and acting agent
// ("market:<op>:<sha256 of the agent>", as matters scopes its keys), so
// another agent using the same key never makes the owner's request answer
// idempotency_conflict, nor gets the owner's answer.
package market
