package admin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/sandbox"
	"dialbox/internal/sandboxclock"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"
)

// ---- reset and clock ----

// resetState returns everything to the start: tenants as the fixtures (or
// the demo tenant) make them, no fault rules, an empty journal and sink,
// the real time back on the sandbox clock (its time scale stays).
func (a *Admin) resetState(r *http.Request, _ httprouter.Params) (any, error) {
	err := a.reset(r.Context())
	var bad *config.ConfigError
	if errors.As(err, &bad) {
		return nil, &domain.Error{Code: domain.EBADCONFIG, Message: fmt.Sprintf("Nothing was reset: %v", bad)}
	}
	if err != nil {
		return nil, err
	}
	a.faults.Clear()
	a.journal.Clear()
	a.sink.Clear("")
	if a.sandboxNow != nil {
		a.sandboxNow.SetOffset(0)
	}
	return a.listApps(r, nil)
}

// clockBody changes the time scale, the sandbox's now, or both; now and
// offset_seconds are two ways to say the same thing.
type clockBody struct {
	TimeScale     *float64 `json:"time_scale"`
	Now           *string  `json:"now"`
	OffsetSeconds *int64   `json:"offset_seconds"`
}

func (a *Admin) ClockState() domain.ClockState {
	scale := 1.0
	if a.clock != nil {
		scale = a.clock.TimeScale()
	}
	return domain.ClockState{TimeScale: scale, Now: a.sandboxNow.Now().UTC(),
		OffsetSeconds: int64(a.sandboxNow.Offset().Round(time.Second) / time.Second)}
}

func (a *Admin) getClock(*http.Request, httprouter.Params) (any, error) {
	return a.ClockState(), nil
}

func (a *Admin) setClock(r *http.Request, ps httprouter.Params) (any, error) {
	var b clockBody
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	if b.TimeScale == nil && b.Now == nil && b.OffsetSeconds == nil {
		return nil, domain.Invalid("time_scale", "is required, unless now or offset_seconds is given")
	}
	if b.Now != nil && b.OffsetSeconds != nil {
		return nil, domain.Invalid("offset_seconds", "give now or offset_seconds, not both")
	}
	// Everything is checked before anything changes.
	if b.TimeScale != nil {
		if err := a.checkTimeScale(b.TimeScale); err != nil {
			return nil, err
		}
	}
	var err error
	switch {
	case b.Now != nil:
		err = a.SetSandboxNow(*b.Now)
	case b.OffsetSeconds != nil:
		err = a.SetSandboxOffset(*b.OffsetSeconds)
	}
	if err != nil {
		return nil, err
	}
	if b.TimeScale != nil {
		a.clock.SetTimeScale(*b.TimeScale)
	}
	return a.getClock(r, ps)
}

// SetTimeScale is the time scale's change, for the admin API and the console.
func (a *Admin) SetTimeScale(scale *float64) error {
	if err := a.checkTimeScale(scale); err != nil {
		return err
	}
	a.clock.SetTimeScale(*scale)
	return nil
}

func (a *Admin) checkTimeScale(scale *float64) error {
	if scale == nil || *scale <= 0 || math.IsInf(*scale, 0) || math.IsNaN(*scale) {
		return domain.Invalid("time_scale", "is required and must be a positive number")
	}
	if a.clock == nil {
		return domain.Invalid("time_scale", `is always 1 with real calls (dialer.kind = "sip")`)
	}
	return nil
}

// realTimeOnly refuses to move the time of a server making real calls: a
// moved clock would dial people at hours their call windows forbid.
const realTimeOnly = `is always the real time with real calls (dialer.kind = "sip")`

// maxOffsetDays is sandboxclock.MaxOffset in the words of the answers.
const maxOffsetDays = int64(sandboxclock.MaxOffset / (24 * time.Hour))

// SetSandboxNow moves the sandbox's now to the RFC 3339 time given, from
// which it advances at real speed; the engine looks again at once.
func (a *Admin) SetSandboxNow(value string) error {
	if a.sandboxNow == nil {
		return domain.Invalid("now", realTimeOnly)
	}
	at, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(value))
	if err != nil {
		return domain.Invalid("now", `must be a time in RFC 3339 with its offset, like "2026-11-30T22:00:00+07:00"`)
	}
	if !a.sandboxNow.Set(at) {
		return domain.Invalid("now", fmt.Sprintf("must be within %d days of the real time", maxOffsetDays))
	}
	a.wake(0)
	return nil
}

// SetSandboxOffset moves the sandbox's now seconds from the real time; 0
// brings the real time back.
func (a *Admin) SetSandboxOffset(seconds int64) error {
	if a.sandboxNow == nil {
		return domain.Invalid("offset_seconds", realTimeOnly)
	}
	if seconds > maxOffsetDays*86400 || seconds < -maxOffsetDays*86400 ||
		!a.sandboxNow.SetOffset(time.Duration(seconds)*time.Second) {
		return domain.Invalid("offset_seconds", fmt.Sprintf("must be within %d days (either way) of the real time", maxOffsetDays))
	}
	a.wake(0)
	return nil
}

// ---- journal ----

func journalFilter(q url.Values) (sandbox.JournalFilter, error) {
	f := sandbox.JournalFilter{Method: q.Get("method"), Path: q.Get("path"), Operation: q.Get("operation"),
		Tenant: q.Get("tenant"), Fault: q.Get("fault")}
	var ok bool
	if f.Status, ok = httpx.IntParam(q.Get("status"), 0, 100, 599); !ok {
		return f, domain.Invalid("status", "must be an HTTP status from 100 to 599")
	}
	if f.Code, ok = httpx.IntParam(q.Get("code"), 0, 0, 1<<31-1); !ok {
		return f, domain.Invalid("code", "must be an integer")
	}
	var err error
	if f.Since, err = httpx.TimeParam(q, "since"); err != nil {
		return f, err
	}
	f.Until, err = httpx.TimeParam(q, "until")
	return f, err
}

func (a *Admin) listJournal(r *http.Request, _ httprouter.Params) (any, error) {
	q := r.URL.Query()
	f, err := journalFilter(q)
	if err != nil {
		return nil, err
	}
	limit, ok := httpx.IntParam(q.Get("limit"), 100, 1, 10000)
	if !ok {
		return nil, domain.Invalid("limit", "must be an integer from 1 to 10000")
	}
	list, total := a.journal.Find(f, limit)
	return map[string]any{"requests": list, "total": total}, nil
}

func (a *Admin) countJournal(r *http.Request, _ httprouter.Params) (any, error) {
	f, err := journalFilter(r.URL.Query())
	if err != nil {
		return nil, err
	}
	_, total := a.journal.Find(f, 0)
	return map[string]int{"count": total}, nil
}

func (a *Admin) clearJournal(*http.Request, httprouter.Params) (any, error) {
	a.journal.Clear()
	return map[string]bool{"cleared": true}, nil
}

// ---- fault rules ----

// checkFault validates a new rule and fills in what it derives: the fields
// every kind shares, then that no other kind's field is set, then the kind's
// own fields, so the first problem reported is always the same one.
func (a *Admin) checkFault(ctx context.Context, b *sandbox.FaultBody) (*sandbox.FaultRule, error) {
	rule := b.FaultRule
	rule.ID, rule.Hits, rule.Remaining, rule.CreatedAt = uuid.NewString(), 0, b.Times, a.now().UTC()
	rule.Probability = 1
	if b.Probability != nil {
		if *b.Probability <= 0 || *b.Probability > 1 {
			return nil, domain.Invalid("probability", "must be more than 0 and at most 1")
		}
		rule.Probability = *b.Probability
	}
	if rule.Times < 0 {
		return nil, domain.Invalid("times", "must not be negative (0: until removed)")
	}
	if rule.Operation != "" && rule.Operation != "A" && rule.Operation != "B" && rule.Operation != "C" {
		return nil, domain.Invalid("operation", "must be A, B or C (or absent for all three)")
	}
	if rule.APIKey != "" {
		app, err := a.apps.AppByKey(ctx, rule.APIKey)
		if errors.Is(err, domain.ErrNotFound) {
			return nil, domain.Invalid("api_key", domain.QuotedPrefix(rule.APIKey)+" is not an application")
		}
		if err != nil {
			return nil, err
		}
		rule.AppID = app.ID
	}
	if err := checkFaultFields(&rule); err != nil {
		return nil, err
	}
	var err error
	switch rule.Kind {
	case sandbox.FaultError:
		err = checkErrorFault(&rule)
	case sandbox.FaultLatency:
		err = checkLatencyFault(&rule)
	case sandbox.FaultDial:
		err = checkDialFault(&rule, a.region)
	case sandbox.FaultWebhook:
		err = checkWebhookFault(&rule)
	}
	if err != nil {
		return nil, err
	}
	return &rule, nil
}

// checkFaultFields checks the kind and that the rule sets only its kind's
// fields, so a typo'd rule fails loudly.
func checkFaultFields(rule *sandbox.FaultRule) error {
	used := map[string]bool{"operation": rule.Operation != "", "scenario_id": rule.ScenarioID != "",
		"code": rule.Code != 0, "message": rule.Message != "", "delay_ms": rule.DelayMS != 0,
		"delay_max_ms": rule.DelayMaxMS != 0, "phone": rule.Phone != "", "outcome": rule.Outcome != "",
		"endpoint_id": rule.EndpointID != "", "status": rule.Status != 0, "digits": rule.Digits != nil, "machine": rule.Machine,
		"says": rule.Says != nil}
	allowed := map[string][]string{
		sandbox.FaultError:   {"operation", "scenario_id", "code", "message"},
		sandbox.FaultLatency: {"operation", "scenario_id", "delay_ms", "delay_max_ms"},
		sandbox.FaultDial:    {"phone", "outcome", "digits", "machine", "says"},
		sandbox.FaultWebhook: {"endpoint_id", "status"},
	}[rule.Kind]
	if allowed == nil {
		return domain.Invalid("kind", "must be error, latency, dial or webhook")
	}
	for _, k := range allowed {
		delete(used, k)
	}
	for k, set := range used {
		if set {
			return domain.Invalid(k, "does not apply to a "+rule.Kind+" rule")
		}
	}
	return nil
}

// checkErrorFault: the code is one of the spec's, and one the rule's
// operation can answer.
func checkErrorFault(rule *sandbox.FaultRule) error {
	if sandbox.FaultCodes[rule.Code] == nil {
		return domain.Invalid("code", "must be a code of the spec's error tables: 400, 401, 500, 1104, 1105, 1201, 1208, 1402, 1403, 2301, 9999 (or an extension: 404, 413, 429, 3001)")
	}
	if rule.Operation != "" && !sandbox.Answerable(rule.Operation, rule.Code) {
		codes := make([]string, len(sandbox.OperationCodes[rule.Operation]))
		for i, c := range sandbox.OperationCodes[rule.Operation] {
			codes[i] = strconv.Itoa(c)
		}
		return domain.Invalid("code", fmt.Sprintf("operation %s never answers %d; its codes are %s",
			rule.Operation, rule.Code, strings.Join(codes, ", ")))
	}
	return nil
}

func checkLatencyFault(rule *sandbox.FaultRule) error {
	if rule.DelayMS < 0 || rule.DelayMaxMS < 0 || rule.DelayMS+rule.DelayMaxMS == 0 {
		return domain.Invalid("delay_ms", "is required: a positive number of milliseconds")
	}
	if rule.DelayMaxMS != 0 && rule.DelayMaxMS < rule.DelayMS {
		return domain.Invalid("delay_max_ms", "must not be less than delay_ms")
	}
	return nil
}

// checkDialFault checks a call outcome rule and fills in the outcome that
// digits or machine imply and the phone in E.164 (read in region).
func checkDialFault(rule *sandbox.FaultRule, region string) error {
	// digits and machine force what a simulated callee does: a person
	// pressing keys (ANSWERED) or a voicemail box (VOICE_MAIL).
	switch {
	case rule.Machine && rule.Digits != nil:
		return domain.Invalid("digits", "a machine presses no keys")
	case rule.Machine && rule.Outcome == "":
		rule.Outcome = domain.OutcomeVoiceMail
	case rule.Machine && rule.Outcome != domain.OutcomeVoiceMail:
		return domain.Invalid("machine", "a machine answers VOICE_MAIL: leave outcome out or set it to VOICE_MAIL")
	case rule.Digits != nil && !domain.ValidDigits(*rule.Digits):
		return domain.Invalid("digits", "must be keys 0-9, * and #")
	case rule.Digits != nil && rule.Outcome == "":
		rule.Outcome = domain.OutcomeAnswered
	case rule.Digits != nil && rule.Outcome != domain.OutcomeAnswered:
		return domain.Invalid("digits", "only a person presses keys: outcome must be ANSWERED")
	}
	// says, like digits, is a person: ANSWERED.
	switch r := domain.CheckSays(rule.Says); {
	case rule.Says == nil:
	case r != "":
		return domain.Invalid("says", r)
	case rule.Machine:
		return domain.Invalid("says", "a machine answers no question: leave machine out")
	case rule.Outcome == "":
		rule.Outcome = domain.OutcomeAnswered
	case rule.Outcome != domain.OutcomeAnswered:
		return domain.Invalid("says", "only a person speaks: outcome must be ANSWERED")
	}
	if !sandbox.DialOutcomes[rule.Outcome] {
		return domain.Invalid("outcome", "must be ANSWERED, BUSY, NO_ANSWER, FAILED, REJECTED, VOICE_MAIL, INVALID_NUMBER or CANCELED")
	}
	if rule.Phone != "" {
		phone, err := domain.NormalizePhone(rule.Phone, region)
		if err != nil {
			return domain.Invalid("phone", err.Error())
		}
		rule.Phone = phone
	}
	return nil
}

func checkWebhookFault(rule *sandbox.FaultRule) error {
	if rule.Status < 100 || rule.Status > 599 {
		return domain.Invalid("status", "is required: an HTTP status from 100 to 599")
	}
	return nil
}

func (a *Admin) addFault(r *http.Request, _ httprouter.Params) (any, error) {
	var b sandbox.FaultBody
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	return a.AddFault(r.Context(), &b)
}

func (a *Admin) listFaults(*http.Request, httprouter.Params) (any, error) {
	return map[string]any{"faults": a.FaultRules()}, nil
}

func (a *Admin) removeFault(_ *http.Request, ps httprouter.Params) (any, error) {
	if err := a.RemoveFault(ps.ByName("fault")); err != nil {
		return nil, err
	}
	return map[string]string{"deleted": ps.ByName("fault")}, nil
}

func (a *Admin) clearFaults(*http.Request, httprouter.Params) (any, error) {
	a.faults.Clear()
	return map[string]bool{"cleared": true}, nil
}

// ---- sink ----

func (a *Admin) listSink(r *http.Request, _ httprouter.Params) (any, error) {
	q := r.URL.Query()
	f := sandbox.SinkFilter{Name: q.Get("name"), EventType: q.Get("event_type"), WebhookID: q.Get("webhook_id")}
	switch q.Get("verified") {
	case "":
	case "true", "false":
		v := q.Get("verified") == "true"
		f.Verified = &v
	default:
		return nil, domain.Invalid("verified", "must be true or false")
	}
	var err error
	if f.Since, err = httpx.TimeParam(q, "since"); err != nil {
		return nil, err
	}
	msgs := a.sink.Find(f)
	return map[string]any{"messages": msgs, "count": len(msgs)}, nil
}

func (a *Admin) clearSink(r *http.Request, _ httprouter.Params) (any, error) {
	a.sink.Clear(r.URL.Query().Get("name"))
	return map[string]bool{"cleared": true}, nil
}
