package sipcall

// dialbox's call outcome names.
const (
	OutcomeAnswered      = "ANSWERED"
	OutcomeBusy          = "BUSY"
	OutcomeNoAnswer      = "NO_ANSWER"
	OutcomeFailed        = "FAILED"
	OutcomeRejected      = "REJECTED"
	OutcomeInvalidNumber = "INVALID_NUMBER"
	OutcomeCanceled      = "CANCELED"
)

// Outcome maps how a call ended to dialbox's outcome: answered is
// ANSWERED whatever ended it; a call we cancelled ourselves is NO_ANSWER
// after the ring timeout and CANCELED when the caller's context stopped
// it; otherwise the final SIP status decides, and anything without a
// known status (a transport error, no final answer, 3xx) is FAILED.
func Outcome(r CallResult) string {
	if r.Answered {
		return OutcomeAnswered
	}
	switch r.EndedBy {
	case EndRingTimeout:
		return OutcomeNoAnswer
	case EndCancelled:
		return OutcomeCanceled
	}
	if r.Err != nil {
		return OutcomeFailed
	}
	switch r.Status {
	case 486, 600:
		return OutcomeBusy
	case 603:
		return OutcomeRejected
	case 480, 408:
		return OutcomeNoAnswer
	case 404, 484, 604:
		return OutcomeInvalidNumber
	}
	return OutcomeFailed
}
