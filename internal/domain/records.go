package domain

// What the store keeps and hands back, and what the engine, the deliverer,
// the admin API and the console hand it: records, filters, pages, claims
// and the ends of calls, shared by the store and the parts that use it.

import (
	"dialbox/internal/destinations"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/google/uuid"
)

// ImportResult is what an import stored.
type ImportResult struct {
	ImportID string
	Added    []AddedContact
	Skipped  []SkippedContact
}

// callDelay is a due contact an advertising rule makes wait: its next
// attempt moves to Until, with a call_blocks row giving the reason.
type CallDelay struct {
	AppID   int64
	Contact DueContact
	Reason  string
	Until   time.Time
}

// AppPatch holds the application fields an update sets; nil leaves one as is.
type AppPatch struct {
	Name      *string
	APISecret *string
	Disabled  *bool
	// Destinations replaces both of the tenant's lists of prefixes.
	Destinations *destinations.Rules
}

type Pool struct {
	Key string `json:"key"`
	// Trunk is the SIP trunk the pool's calls go through; empty (left out
	// of answers, which stay as they were before trunks): the first.
	Trunk     string    `json:"trunk,omitempty"`
	Numbers   []Hotline `json:"numbers"`
	CreatedAt time.Time `json:"created_at"`
}

// errBadTransition carries the status a scenario was in when a transition
// from it was refused.
type ErrBadTransition struct{ Status string }

type ContactRecord struct {
	ID            string            `json:"id"`
	ScenarioID    string            `json:"scenario_id"`
	CampaignID    string            `json:"campaign_id,omitempty"`
	ImportID      string            `json:"import_id"`
	Phone         string            `json:"phone"`
	Fields        map[string]string `json:"fields"`
	State         string            `json:"state"`
	Attempts      int               `json:"attempts"`
	NextAttemptAt time.Time         `json:"next_attempt_at"`
	Outcome       string            `json:"outcome,omitempty"`
	CreatedAt     time.Time         `json:"created_at"`
	UpdatedAt     time.Time         `json:"updated_at"`

	Seq int64 `json:"-"` // the keyset cursor, not shown
}

type CallRecord struct {
	ID         string     `json:"id"`
	Attempt    int        `json:"attempt"`
	Hotline    string     `json:"hotline"`
	State      string     `json:"state"`
	Outcome    string     `json:"outcome,omitempty"`
	Cause      *int64     `json:"cause"`
	StartedAt  time.Time  `json:"started_at"`
	AnsweredAt *time.Time `json:"answered_at"`
	EndedAt    *time.Time `json:"ended_at"`
	Duration   int64      `json:"duration"`
	Cost       int64      `json:"cost"`
	// What the script did, as the call's webhooks say (callResults).
	AnsweredBy string          `json:"answered_by"`
	Digits     string          `json:"digits"`
	Result     string          `json:"result"`
	Steps      json.RawMessage `json:"steps"`
	Transcript json.RawMessage `json:"transcript"`
	// RecordingURL is filled by the admin API when recorded is set
	// (docs/voicebot.md#recordings); left out otherwise.
	RecordingURL string `json:"recording_url,omitempty"`

	Recorded bool `json:"-"` // RecordingURL is filled when set
}

// CursorPage is how the contact and webhook-message lists page: Limit rows
// created in [From, To) (zero times: unbounded), newest first, after Cursor,
// the seq of the last row of the previous page (0: the first page).
type CursorPage struct {
	From, To time.Time
	Cursor   int64
	Limit    int
}

// ContactFilter selects contacts of one application; zero fields match all.
// ScanLimit, when above 0, bounds how many contacts (newest first) one page
// looks through, so a filter that matches few of millions still answers at
// once: the page may then hold fewer than Limit, with a cursor to look
// further (docs/console.md#contacts).
type ContactFilter struct {
	ScenarioID, CampaignID, State, Outcome, Phone string
	ScanLimit                                     int
	CursorPage
}

// ResultFilter selects the contacts of a results export
// (docs/admin.md#results-as-csv): one scenario's, or one campaign's,
// with the state, outcome and creation times given (zero fields match all).
type ResultFilter struct {
	ScenarioID, CampaignID string
	State, Outcome         string
	From, To               time.Time // created in [From, To)
}

// ContactResult is a contact with its last call, if it had one: one row of
// a results export.
type ContactResult struct {
	ContactRecord
	Last *CallRecord
}

// AuditEntry is one line of the audit log (docs/console.md#audit-log):
// who did what, when, to which tenant, and how it went.
type AuditEntry struct {
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	Actor  string    `json:"actor"`  // the sign-in
	Action string    `json:"action"` // the form's path, naming the records acted on
	AppKey string    `json:"app_key,omitempty"`
	Detail string    `json:"detail,omitempty"` // what the console answered: done, or why not
}

// ScenarioChange is what a scenario's creation or change sets: the admin
// API's JSON body, and what the console's form makes; a nil field is left
// as it is.
type ScenarioChange struct {
	ID                 *string         `json:"id"`
	Name               *string         `json:"name"`
	Description        *string         `json:"description"`
	Status             *string         `json:"status"`
	Content            *string         `json:"content"`
	Script             json.RawMessage `json:"script"` // null removes the script
	PersonalizedFields []string        `json:"personalized_fields"`
	CallConfig         json.RawMessage `json:"call_config"` // merged over the current (or default) one
}

type ImportRecord struct {
	ID         string    `json:"id"`
	ScenarioID string    `json:"scenario_id"`
	CampaignID string    `json:"campaign_id,omitempty"`
	Requested  int       `json:"requested"`
	Added      int       `json:"added"`
	Skipped    int       `json:"skipped"`
	Code       int       `json:"code"`
	CreatedAt  time.Time `json:"created_at"`
}

type WebhookEndpoint struct {
	ID        string    `json:"id"`
	URL       string    `json:"url"`
	Secret    string    `json:"secret,omitempty"` // shown on create and rotate only
	Events    []string  `json:"events"`
	Enabled   bool      `json:"enabled"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

type WebhookMessage struct {
	ID         string          `json:"id"`
	EndpointID string          `json:"endpoint_id"`
	EventType  string          `json:"event_type"`
	Payload    json.RawMessage `json:"payload"`
	State      string          `json:"state"`
	Attempts   int             `json:"attempts"`
	NextTryAt  time.Time       `json:"next_try_at"`
	CreatedAt  time.Time       `json:"created_at"`
	UpdatedAt  time.Time       `json:"updated_at"`

	Seq int64 `json:"-"` // the keyset cursor, not shown
}

type WebhookAttempt struct {
	Attempt    int       `json:"attempt"`
	StatusCode *int64    `json:"status_code"`
	Error      string    `json:"error,omitempty"`
	LatencyMS  int64     `json:"latency_ms"`
	At         time.Time `json:"at"`
}

// MessageFilter selects webhook messages of one application.
type MessageFilter struct {
	EndpointID, State, EventType string
	CursorPage
}

// Progress is a scenario's or a campaign's contacts by state, and the
// finished ones by outcome.
type Progress struct {
	Queued, Dialing, Done int64
	Outcomes              []OutcomeCount // of the done ones, most first
}

// dueContact is a queued contact whose next attempt is due.
type DueContact struct {
	Seq      int64
	Phone    string
	Fields   string // JSON object
	Campaign string // "" when added to the scenario directly
}

// poolLines is what the scheduler reads of a hotline pool: its enabled
// numbers in a stable order, so ROUND_ROBIN goes round the same way every
// time, and the trunk its calls go through.
type PoolLines struct {
	Numbers []string
	Trunk   string
}

// CallsUp is an application's calls up on every node of a shared store:
// how many, how many per scenario, and their hotlines.
type CallsUp struct {
	Total      int
	ByScenario map[string]int
	Hotlines   map[string]bool
}

// callClaim is a call about to be placed.
type CallClaim struct {
	CallID     string
	AppID      int64
	ScenarioID string
	Contact    DueContact
	Hotline    string
	Trunk      string // the pool's (its name, "" resolved), holding a channel reserved on it
	// Capacity is the trunk's as this node's configuration gives it, which
	// a store several nodes share holds across them all; SQLite's one
	// server leaves it to the dialer's Reserve.
	Capacity TrunkCapacity
	Start    time.Time
	Attempt  int // set by ClaimCalls
	// AdPhone is the number of an advertising scenario's call, which the
	// daily limit counts (calls.ad_phone); "" for a care call.
	AdPhone string
}

// callEnd is how a call ended and what the engine decided about it.
type CallEnd struct {
	CallID string
	// AppID is the call's tenant, whose writer settles it on PostgreSQL
	// (any writer settles it right; the tenant's own batches best).
	AppID  int64
	Result DialResult
	// Interrupted calls (dialbox stopped or crashed while they were up) are
	// never charged, do not use up a re_call, and are tried again at once.
	Interrupted bool
	ReCall      ReCall
	RetryAt     time.Time // when the contact is called again, if it is
	Now         time.Time
	// FirstTry is when new webhook messages are first due.
	FirstTry time.Time
	// RecordingBase starts the recording_url of a recorded call
	// (recordingURL).
	RecordingBase string
}

// newV7 is a time-ordered UUID, cheap to index.
func NewV7() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}

// outMessage is a pending webhook message ready to send.
type OutMessage struct {
	Seq        int64
	ID         string // webhook-id
	EndpointID string
	URL        string
	Secret     string
	Payload    []byte
	Tries      int
}

// deliveryAttempt is one try at sending a message and what follows from it.
type DeliveryAttempt struct {
	Seq        int64
	EndpointID string
	Status     int    // 0: no HTTP answer
	Error      string // why it failed, if it did
	Latency    time.Duration
	At         time.Time
	State      string // MessagePending (to retry), MessageDelivered or MessageDead
	Tries      int
	NextTryAt  time.Time
	// DisableEndpoint: the receiver answered 410 Gone.
	DisableEndpoint bool
}

var ErrStoreClosed = errors.New("store is closed")

// OutcomeCount is how many finished contacts ended with one outcome.
type OutcomeCount struct {
	Outcome string
	N       int64
}

// CallCount is how many of a scenario's or a campaign's calls started in
// one minute (Ended false), or ended in it with Outcome (Ended true): what
// the console's charts draw (docs/console.md#charts).
type CallCount struct {
	Minute  time.Time // the minute's start, UTC
	Ended   bool
	Outcome string // of an ended call; "" while none was recorded
	N       int64
}

// Total is every contact counted.
func (p Progress) Total() int64 { return p.Queued + p.Dialing + p.Done }

// Answered is the share of finished contacts whose outcome is ANSWERED,
// in percent; ok is false before any finished.
func (p Progress) Answered() (pct float64, ok bool) {
	if p.Done == 0 {
		return 0, false
	}
	for _, o := range p.Outcomes {
		if o.Outcome == OutcomeAnswered {
			return 100 * float64(o.N) / float64(p.Done), true
		}
	}
	return 0, true
}

// add counts n contacts in state, and under their outcome once done.
func (p *Progress) Add(state, outcome string, n int64) {
	switch state {
	case ContactQueued:
		p.Queued += n
	case ContactDialing:
		p.Dialing += n
	default:
		p.Done += n
		p.Outcomes = append(p.Outcomes, OutcomeCount{outcome, n})
	}
}

// sortOutcomes puts the most common outcome first, ties by name.
func (p *Progress) SortOutcomes() {
	sort.Slice(p.Outcomes, func(i, j int) bool {
		a, b := p.Outcomes[i], p.Outcomes[j]
		return a.N > b.N || (a.N == b.N && a.Outcome < b.Outcome)
	})
}

type Hotline struct {
	Number  string `json:"number"`
	Enabled bool   `json:"enabled"`
}

func (e ErrBadTransition) Error() string { return "scenario is " + e.Status }

// TrunkCapacity is a trunk's capacity as sip.trunks configures it: calls
// up at once (max_channels) and calls started in any one second
// (max_cps). Zero is no limit: a dialer without trunks (the simulator).
// On a store several nodes share, the claim holds it across every node
// (docs/postgres.md#claiming-calls).
type TrunkCapacity struct {
	Channels, CPS int
}

func (c TrunkCapacity) Limited() bool { return c.Channels > 0 || c.CPS > 0 }

// NationalList is the do-not-call list selector of the national register;
// any other value is the id of the application whose list it is.
const NationalList int64 = 0

// DNCListing is one list holding a number: the national register ("app"
// empty) or a tenant's, and since when.
type DNCListing struct {
	List  string    `json:"list"` // national or tenant
	App   string    `json:"app,omitempty"`
	Since time.Time `json:"since"`
}

// ClockState is the clock as GET and PUT /admin/v1/clock answer it and the
// console's clock page shows it: the simulator's time scale and the
// sandbox's time (docs/sandbox.md#the-clock).
type ClockState struct {
	TimeScale     float64   `json:"time_scale"`
	Now           time.Time `json:"now"`
	OffsetSeconds int64     `json:"offset_seconds"`
}
