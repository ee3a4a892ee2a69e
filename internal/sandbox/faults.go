package sandbox

import (
	"bytes"
	"context"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
)

// Faults holds the sandbox's fault rules: error answers and latency for the
// public operations, outcomes forced on the simulated dialer, and HTTP
// statuses forced on webhook deliveries. Rules live in memory and are
// dropped by a reset.
type Faults struct {
	campaigns Campaigns

	mu    sync.Mutex
	rules []*FaultRule // in creation order; the first matching error rule answers
}

// Fault kinds.
const (
	FaultError   = "error"   // answer an operation with an error code
	FaultLatency = "latency" // delay an operation's answer
	FaultDial    = "dial"    // force the outcome of simulated calls
	FaultWebhook = "webhook" // fail webhook deliveries with an HTTP status
)

// FaultRule is one rule. Filters left empty match everything.
type FaultRule struct {
	ID   string `json:"id"`
	Kind string `json:"kind"`

	Operation  string `json:"operation,omitempty"`   // error, latency: A, B or C
	APIKey     string `json:"api_key,omitempty"`     // error, latency, dial: one tenant
	ScenarioID string `json:"scenario_id,omitempty"` // error, latency: A's scenario, or C's campaign's

	Code    int    `json:"code,omitempty"`    // error: a code of the spec's tables (or an extension)
	Message string `json:"message,omitempty"` // error: default is the spec's message for the code

	DelayMS    int `json:"delay_ms,omitempty"`     // latency: fixed delay,
	DelayMaxMS int `json:"delay_max_ms,omitempty"` // or random in [delay_ms, delay_max_ms]

	Phone   string  `json:"phone,omitempty"`   // dial: one number (E.164 after reading)
	Outcome string  `json:"outcome,omitempty"` // dial: the outcome to produce
	Digits  *string `json:"digits,omitempty"`  // dial: the keys the simulated callee presses ("": none); ANSWERED unless outcome says
	Machine bool    `json:"machine,omitempty"` // dial: a voicemail box answers (VOICE_MAIL)
	// dial: what the simulated callee says, one utterance per listening
	// turn; ANSWERED unless outcome says.
	Says []string `json:"says,omitempty"`

	EndpointID string `json:"endpoint_id,omitempty"` // webhook: one endpoint
	Status     int    `json:"status,omitempty"`      // webhook: HTTP status the delivery gets

	Times       int       `json:"times,omitempty"` // fire this many times, then the rule is removed; 0: until removed
	Probability float64   `json:"probability"`     // chance of firing on a match
	Remaining   int       `json:"remaining,omitempty"`
	Hits        int64     `json:"hits"`
	CreatedAt   time.Time `json:"created_at"`

	AppID int64 `json:"-"` // dial rules match the engine's application id
}

// Campaigns is what the fault rules read of the store: the scenario of
// operation C's campaign, for a rule naming a scenario.
type Campaigns interface {
	Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error)
}

// NewFaults returns an empty set of rules reading campaigns for scenario
// rules on operation C.
func NewFaults(campaigns Campaigns) *Faults {
	return &Faults{campaigns: campaigns}
}

// fire reports whether a matching rule fires now, and counts it. Callers
// hold f.mu.
func (f *Faults) fire(rule *FaultRule) bool {
	if rule.Times > 0 && rule.Remaining <= 0 {
		return false // used up by a concurrent request
	}
	if rule.Probability < 1 && rand.Float64() >= rule.Probability {
		return false
	}
	rule.Hits++
	if rule.Times > 0 {
		rule.Remaining--
		if rule.Remaining == 0 {
			f.removeLocked(rule.ID)
		}
	}
	return true
}

func (f *Faults) removeLocked(id string) bool {
	for i, r := range f.rules {
		if r.ID == id {
			f.rules = append(f.rules[:i:i], f.rules[i+1:]...)
			return true
		}
	}
	return false
}

// Apply runs the latency and error rules matching a request of op by app:
// it sleeps for every latency rule that fires, then returns the error of
// the first error rule that fires (nil: serve the request normally).
func (f *Faults) Apply(w http.ResponseWriter, r *http.Request, ps httprouter.Params, op httpx.Operation, app *domain.Application) *httpx.Error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	if len(f.rules) == 0 {
		f.mu.Unlock()
		return nil
	}
	candidates := make([]*FaultRule, 0, len(f.rules))
	needScenario := false
	for _, rule := range f.rules {
		if (rule.Kind == FaultLatency || rule.Kind == FaultError && Answerable(op.Name, rule.Code)) &&
			(rule.Operation == "" || rule.Operation == op.Name) && (rule.APIKey == "" || rule.APIKey == app.APIKey) {
			candidates = append(candidates, rule)
			needScenario = needScenario || rule.ScenarioID != ""
		}
	}
	f.mu.Unlock()
	if len(candidates) == 0 {
		return nil
	}
	scenario := ""
	if needScenario {
		scenario = f.scenarioOf(r, ps, op, app)
	}

	var delay time.Duration
	var answer *httpx.Error
	f.mu.Lock()
	for _, rule := range candidates {
		if rule.ScenarioID != "" && rule.ScenarioID != scenario {
			continue
		}
		switch {
		case rule.Kind == FaultLatency && f.fire(rule):
			d := rule.DelayMS
			if rule.DelayMaxMS > rule.DelayMS {
				d += rand.IntN(rule.DelayMaxMS - rule.DelayMS + 1)
			}
			delay += time.Duration(d) * time.Millisecond
			journalFault(w, rule.ID)
		case rule.Kind == FaultError && answer == nil && f.fire(rule):
			answer = ForcedError(op, rule.Code, rule.Message)
			journalFault(w, rule.ID)
		}
	}
	f.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	return answer
}

// scenarioOf is the scenario a request of A or C is for: A names it in the
// path; C names a campaign in its body, which is read and put back.
func (f *Faults) scenarioOf(r *http.Request, ps httprouter.Params, op httpx.Operation, app *domain.Application) string {
	switch op.Name {
	case httpx.OpAddToScenario.Name:
		return ps.ByName("scenario_id")
	case httpx.OpAddToCampaign.Name:
		// Only the start of a body is looked at, so a huge one costs no more
		// here than it will in the handler (which still applies its limits).
		body, err := io.ReadAll(io.LimitReader(r.Body, maxPeek))
		rest := io.Reader(r.Body)
		if err != nil {
			rest = errReader{err}
		}
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), rest), r.Body}
		var b struct {
			CampaignID string `json:"campaign_id"`
		}
		if json.Unmarshal(body, &b) != nil || b.CampaignID == "" {
			return ""
		}
		if c, err := f.campaigns.Campaign(r.Context(), app.ID, b.CampaignID); err == nil {
			return c.ScenarioID
		}
	}
	return ""
}

// maxPeek bounds how much of operation C's body a scenario rule reads.
const maxPeek = 1 << 20

type readCloser struct {
	io.Reader
	io.Closer
}

// errReader hands a read error of the original body on to the handler.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// FaultCodes are the codes an error rule may answer: every code of the
// spec's tables and dialbox's extensions, with their messages. 9999 and 500
// take the operation's own internal-error message.
var FaultCodes = map[int]*httpx.Error{
	400: {Code: 400, Message: "Validation Failed"}, 401: httpx.ErrUnauthorized, 404: httpx.PublicNotFound["Campaign"],
	413: httpx.PublicBodies[domain.ETOOLARGE], 429: httpx.ErrRateLimited, 1104: httpx.PublicBodies[domain.EWALLETEXPIRED],
	1105: httpx.PublicBodies[domain.EWALLETEMPTY], 1201: httpx.ErrAppNotFound, 1208: httpx.PublicBodies[domain.ECONTENTEMPTY],
	1402: httpx.PublicBodies[domain.EIMPORTFAILED], 1403: httpx.PublicBodies[domain.EALLINVALID], 2301: httpx.PublicBodies[domain.EPOOLUNAVAILABLE],
	3001: httpx.PublicNotFound["Scenario"], 9999: httpx.ErrUnknownA, 500: httpx.ErrSystemC,
}

// FaultBody is a new fault rule as given, to the admin API or the
// console's form: its probability absent means always.
type FaultBody struct {
	FaultRule
	Probability *float64 `json:"probability"`
}

// DialOutcomes are the call outcomes of docs/design.md#call-outcomes a
// dial fault may fix.
var DialOutcomes = map[string]bool{domain.OutcomeAnswered: true, domain.OutcomeBusy: true, domain.OutcomeNoAnswer: true,
	domain.OutcomeFailed: true, domain.OutcomeRejected: true, domain.OutcomeVoiceMail: true, domain.OutcomeInvalidNumber: true, domain.OutcomeCanceled: true}

// OperationCodes are the codes each operation answers, in the order of
// docs/api.md#every-code-and-when-it-is-answered: what the console offers
// to force on it.
var OperationCodes = map[string][]int{
	"A": {400, 401, 1201, 3001, 413, 429, 1208, 1104, 2301, 1403, 1105, 1402, 9999},
	"B": {400, 401, 1201, 429, 9999},
	"C": {400, 401, 1201, 404, 413, 429, 1208, 1104, 2301, 1403, 1105, 1402, 500},
}

// Answerable reports whether operation op (A, B or C) answers code:
// the one rule of which code a fault rule may force on which operation.
// The admin API refuses a rule naming an operation that never answers its
// code, a rule naming none fires only on those that do, and the console
// offers each operation the codes of OperationCodes
// (docs/sandbox.md#3-force-any-error).
func Answerable(op string, code int) bool {
	return slices.Contains(OperationCodes[op], code)
}

// ForcedError is the answer an error rule forcing code gives op: its
// message when the rule has one, else the code's own body (op's internal
// error for op's internal-error code).
func ForcedError(op httpx.Operation, code int, message string) *httpx.Error {
	e := FaultCodes[code]
	if code == op.Internal.Code {
		e = op.Internal
	}
	if message != "" {
		return &httpx.Error{Code: code, Message: message}
	}
	return e
}

// BeforeDial is the engine's hook: the outcome a dial rule forces on a call
// of appID to phone, if one fires. Safe on a nil *Faults.
func (f *Faults) BeforeDial(appID int64, phone string) (domain.DialForce, bool) {
	if f == nil {
		return domain.DialForce{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rule := range f.rules {
		if rule.Kind == FaultDial && (rule.AppID == 0 || rule.AppID == appID) &&
			(rule.Phone == "" || rule.Phone == phone) && f.fire(rule) {
			// Adding the rule set the outcome machine, digits or says imply.
			return domain.DialForce{Outcome: rule.Outcome, Digits: rule.Digits, Says: rule.Says}, true
		}
	}
	return domain.DialForce{}, false
}

// BeforeSend is the webhook deliverer's hook: the HTTP status a webhook rule
// forces on a delivery to endpointID, if one fires. Safe on a nil *Faults.
func (f *Faults) BeforeSend(endpointID string) (int, bool) {
	if f == nil {
		return 0, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, rule := range f.rules {
		if rule.Kind == FaultWebhook && (rule.EndpointID == "" || rule.EndpointID == endpointID) && f.fire(rule) {
			return rule.Status, true
		}
	}
	return 0, false
}

// Add appends a rule; it is matched after those already there.
func (f *Faults) Add(rule *FaultRule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = append(f.rules, rule)
}

// List returns a copy of every rule.
func (f *Faults) List() []FaultRule {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]FaultRule, len(f.rules))
	for i, r := range f.rules {
		out[i] = *r
	}
	return out
}

func (f *Faults) Remove(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.removeLocked(id)
}

func (f *Faults) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rules = nil
}
