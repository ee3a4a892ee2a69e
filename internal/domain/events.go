package domain

import (
	"encoding/json"
	"time"

	"dialbox/internal/script"
)

// What a webhook says: the event types, their data and the envelope every
// message carries (internal/store/events.go queues them, internal/webhook delivers them).

// Webhook event types.
const (
	EventCallCompleted    = "call.completed"
	EventContactCompleted = "contact.completed"
)

// eventData is the data of call.completed (one per attempt) and
// contact.completed (once, with the final attempt and the totals).
type EventData struct {
	ContactID     string          `json:"contact_id"`
	Fields        json.RawMessage `json:"fields"` // the contact's echo fields, as operation A/C returned them
	Phone         string          `json:"phone"`
	ScenarioID    string          `json:"scenario_id"`
	CampaignID    *string         `json:"campaign_id"`
	CallID        string          `json:"call_id"`
	Attempt       int             `json:"attempt"`
	Hotline       string          `json:"hotline"`
	Outcome       string          `json:"outcome"`
	Cause         int             `json:"cause"`
	StartedAt     string          `json:"started_at"`
	AnsweredAt    *string         `json:"answered_at"`
	EndedAt       string          `json:"ended_at"`
	Duration      int64           `json:"duration"` // talk seconds
	Cost          int64           `json:"cost"`
	WillRetry     bool            `json:"will_retry"`
	NextAttemptAt *string         `json:"next_attempt_at,omitempty"`
	Attempts      int             `json:"attempts,omitempty"`   // contact.completed only
	TotalCost     *int64          `json:"total_cost,omitempty"` // contact.completed only
	// What the call's script did (docs/voicebot.md#results).
	AnsweredBy string          `json:"answered_by"` // human, machine or unknown
	Digits     string          `json:"digits"`      // every key pressed
	Result     string          `json:"result"`      // the last label set
	Steps      json.RawMessage `json:"steps"`       // []callStep
	Transcript json.RawMessage `json:"transcript"`  // []callTurn
	// The admin URL of the call's recording (docs/voicebot.md#recordings);
	// left out when it has none.
	RecordingURL string `json:"recording_url,omitempty"`
}

// Who picked up a call.
const (
	AnsweredByHuman   = "human"
	AnsweredByMachine = "machine"
	AnsweredByUnknown = "unknown" // nobody, or not known
)

// callStep is one step a call's script took, as call records and webhooks
// show it; input, timed_out and speech are a gather's only, attempts a
// gather's and an agent's, error an agent's.
type callStep struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"`
	StartedAt string  `json:"started_at"`
	EndedAt   string  `json:"ended_at"`
	Input     *string `json:"input,omitempty"`
	Attempts  *int    `json:"attempts,omitempty"`
	TimedOut  *bool   `json:"timed_out,omitempty"`
	Speech    *string `json:"speech,omitempty"` // a gather listening for speech: what it heard
	Error     string  `json:"error,omitempty"`  // an agent ending with agent_error: why
}

// callTurn is one thing said on a call (docs/voicebot.md#results).
type callTurn struct {
	Speaker string `json:"speaker"` // bot or callee
	Text    string `json:"text"`
	At      string `json:"at"`
}

// ScriptResults is what a call's record and webhooks say of its script.
type ScriptResults struct {
	AnsweredBy, Digits, Result string
	Steps, Transcript          json.RawMessage
}

// CallResults is what a call's record and webhooks say of its script:
// nothing pressed, no result, no steps and nothing said when no script ran
// (nobody answered, or the call was interrupted), and answered_by from the
// outcome (ANSWERED human, VOICE_MAIL machine), the dialers' own judgement.
func CallResults(res DialResult) (ScriptResults, error) {
	var r ScriptResults
	switch {
	case res.AnsweredAt == nil, res.AMDNotSure:
		r.AnsweredBy = AnsweredByUnknown
	case res.Outcome == OutcomeVoiceMail:
		r.AnsweredBy = AnsweredByMachine
	default:
		r.AnsweredBy = AnsweredByHuman
	}
	steps, turns := []callStep{}, []callTurn{}
	if o := res.Script; o != nil {
		r.Digits, r.Result = o.Digits, o.Result
		for _, st := range o.Steps {
			cs := callStep{Name: st.Name, Kind: string(st.Kind), StartedAt: EventTime(st.Started), EndedAt: EventTime(st.Ended)}
			if st.Kind == script.KindGather {
				cs.Input, cs.Attempts, cs.TimedOut, cs.Speech = &st.Input, &st.Attempts, &st.TimedOut, st.Speech
			}
			if st.Kind == script.KindAgent {
				cs.Attempts, cs.Error = &st.Attempts, st.Error
			}
			steps = append(steps, cs)
		}
		for _, t := range o.Transcript {
			turns = append(turns, callTurn{Speaker: t.Speaker, Text: t.Text, At: EventTime(t.At)})
		}
	}
	var err error
	if r.Steps, err = MarshalJSON(steps); err != nil {
		return r, err
	}
	r.Transcript, err = MarshalJSON(turns)
	return r, err
}

func EventTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// event is the JSON body of every webhook message.
type Event struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}
