// Package adjudicate turns acceptance criteria and a deliverable into a
// verdict: release, refund or escalated, with every check behind it.
//
// Criteria (DESIGN.md, "Acceptance criteria") compile once into a Plan:
// the schema is checked against a bounded JSON-Schema subset (not full JSON
// Schema: a keyword outside it is rejected, never ignored), every path/op
// assertion compiles into a direct evaluator, every expr assertion into an
// expr-lang program (boolean result, node bound, metered, no clock).
// A Cache keeps plans by the SHA-256 of the criteria's RFC 8785 form, and
// finds a spelling it has seen by the SHA-256 of its bytes.
//
// Tier 0 (the schema and assertions) decides within a budget: every
// operation is charged in units, by what it will do, before it does it,
// and a check during which the decision's budget runs out fails, as any
// failed deterministic check does (RATIONALE.md). Criteria over a static
// limit are refused when they compile.
//
// Order: schema and assertions (tier 0), then checkers, then the jury for
// semantic criteria. A deterministic failure decides refund before any
// checker runs or juror is asked. Judge runs that order through a Runner
// and a Juror and returns the Record of what they answered; Decide is the
// pure part: the same plan, deliverable and record give the same Result,
// byte for byte. A checker that could not run, or whose outcome decides
// nothing (timeout, invalid_checker), never releases funds: with nothing
// else failing, the case is escalated.
//
// Paths are dotted (items.0.id); a key that itself holds a dot cannot be
// named. regex and pattern use Go's RE2 syntax, which runs in linear time.
package adjudicate
