package escrow

// Error codes: the Code of every fault.Error the service returns, named once.
const (
	ECodeCommitUnknown       = "commit_unknown"
	ECodeContractNotFound    = "contract_not_found"
	ECodeDeadlinePassed      = "deadline_passed"
	ECodeInvalidAccount      = "invalid_account"
	ECodeInvalidCurrency     = "invalid_currency"
	ECodeInvalidDeadlineTick = "invalid_deadline_tick"
	ECodeInvalidDeliverBy    = "invalid_deliver_by"
	ECodeInvalidDeliverable  = "invalid_deliverable"
	ECodeInvalidDID          = "invalid_did"
	ECodeInvalidPrice        = "invalid_price"
	ECodeInvalidReviewWindow = "invalid_review_window"
	ECodeInvalidState        = "invalid_state"
	ECodeInvalidVerdict      = "invalid_verdict"
	ECodeMissingField        = "missing_field"
	ECodeRailFailed          = "rail_failed"
	ECodeReviewWindowClosed  = "review_window_closed"
	ECodeSameParty           = "same_party"
	ECodeSellerBanned        = "seller_banned"
	ECodeUnknownChecker      = "unknown_checker"
)
