package domain

import (
	"context"
	"time"

	"dialbox/internal/script"
)

// Call outcomes (docs/design.md#call-outcomes).
const (
	OutcomeAnswered      = "ANSWERED"
	OutcomeBusy          = "BUSY"
	OutcomeNoAnswer      = "NO_ANSWER"
	OutcomeFailed        = "FAILED"
	OutcomeRejected      = "REJECTED"
	OutcomeVoiceMail     = "VOICE_MAIL"
	OutcomeInvalidNumber = "INVALID_NUMBER"
	OutcomeCanceled      = "CANCELED"
	// DoNotCall: the number is on a do-not-call list, so dialbox never
	// dialled it (docs/compliance.md#the-do_not_call-outcome).
	OutcomeDoNotCall = "DO_NOT_CALL"
)

// outcomeCause is the SIP-like cause code recorded with each outcome.
var OutcomeCause = map[string]int{
	OutcomeAnswered:      200, // OK
	OutcomeVoiceMail:     200, // answered, by a machine
	OutcomeBusy:          486, // Busy Here
	OutcomeNoAnswer:      480, // Temporarily Unavailable (rang out)
	OutcomeFailed:        503, // Service Unavailable
	OutcomeRejected:      603, // Decline
	OutcomeInvalidNumber: 404, // Not Found
	OutcomeCanceled:      487, // Request Terminated
	OutcomeDoNotCall:     403, // Forbidden: refused before it left
}

// dialableOutcomes are those a dialer may decide; CANCELED and DO_NOT_CALL
// are dialbox's own.
var dialableOutcomes = []string{OutcomeAnswered, OutcomeBusy, OutcomeNoAnswer, OutcomeFailed,
	OutcomeRejected, OutcomeVoiceMail, OutcomeInvalidNumber}

func IsDialableOutcome(o string) bool {
	for _, d := range dialableOutcomes {
		if d == o {
			return true
		}
	}
	return false
}

// DialRequest is one call to place.
type DialRequest struct {
	From    string // hotline
	To      string // E.164
	Attempt int    // 1 for a contact's first call
	// Start is when the call starts on the engine's clock; the result's
	// times are on the same clock.
	Start time.Time
	// MaxDuration cuts the talk: a call still up then is hung up by dialbox
	// and stays ANSWERED with that duration.
	MaxDuration time.Duration
	// Outcome, when set, forces the outcome (fault injection).
	Outcome string
	// Digits, when set, forces the keys a simulated callee presses (fault
	// injection; "" presses none).
	Digits *string
	// Says, when set, forces what a simulated callee says, one utterance
	// per listening turn (fault injection).
	Says []string
	// Content is the scenario's content and Fields the contact's fields
	// ({{name}} in Content or Script), spoken to whoever answers a real
	// call. Script, when set, is run instead of saying Content.
	Content string
	Script  *script.Script
	Fields  map[string]string
	// Trunk is the pool's trunk ("" is the first).
	Trunk string
	// AMD: the SIP dialer listens for an answering machine (call_config.amd).
	AMD bool
	// Record, when set, is where to write the answered call's recording,
	// a WAV file (docs/voicebot.md#recordings).
	Record string
	// OptOut puts the callee's number on the tenant's do-not-call list,
	// for a script's opt_out step (docs/voicebot.md#step-kinds).
	OptOut func(ctx context.Context) error
}

// DialForce is what a dial fault rule forces on a simulated call
// (docs/sandbox.md): its outcome, and the keys pressed and words said when
// set.
type DialForce struct {
	Outcome string
	Digits  *string
	Says    []string
}

// DialResult is how a call ended. It rang from the request's Start until
// AnsweredAt (nil when nobody, and no machine, picked up) or EndedAt. Talk
// is the billed talk time: EndedAt-AnsweredAt on a real line; the
// simulator's talk in simulated time, so time_scale shortens the wait but
// not the duration or the price.
type DialResult struct {
	Outcome    string
	Cause      int
	AnsweredAt *time.Time
	EndedAt    time.Time
	Talk       time.Duration
	// Script is what the scenario's script did on the answered call; nil
	// when none ran.
	Script *script.Outcome
	// AMDNotSure: answering-machine detection could not tell who answered
	// an ANSWERED call, whose answered_by is then unknown.
	AMDNotSure bool
	// Recording is the size of the WAV file written at DialRequest.Record,
	// 0 when none was (nobody answered, or RecordingErr says why).
	Recording    int64
	RecordingErr error
}

// builtinRules are the simulator's magic test numbers, one per outcome,
// applied after the configured rules (docs/calling.md#outcomes-and-test-numbers).
