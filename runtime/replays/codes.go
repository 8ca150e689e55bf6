package replays

// Error codes: the Code of every fault.Error a batch answers, named once.
const (
	ECodeArtifactTooLarge    = "artifact_too_large"
	ECodeBatchTimeout        = "batch_timeout"
	ECodeBatchTooLarge       = "batch_too_large"
	ECodeCheckerNotFound     = "checker_not_found"
	ECodeCheckersUnavailable = "checkers_unavailable"
	ECodeInvalidArtifact     = "invalid_artifact"
	ECodeInvalidChecker      = "invalid_checker"
	ECodeInvalidEncoding     = "invalid_encoding"
	ECodeInvalidEvidence     = "invalid_evidence"
	ECodeMissingField        = "missing_field"
	ECodeReplayInvalid       = "replay_invalid"
)
