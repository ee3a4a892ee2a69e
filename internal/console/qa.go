package console

import (
	"context"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/sandbox"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
)

// The QA engineer's pages (docs/console.md#for-the-qa-engineer): the
// request journal with "copy as curl", fault rules, the webhook sink and
// the clock.

// ---- request journal ----

const journalPageSize = 50

type journalView struct {
	Filter  url.Values
	Entries []*sandbox.JournalEntry
	Total   int
	Next    string
	Off     bool // journal.max_entries is 0
}

func (c *Console) journalFilter(q url.Values) (sandbox.JournalFilter, error) {
	f := sandbox.JournalFilter{Operation: q.Get("operation"), Tenant: q.Get("app"), Fault: q.Get("fault")}
	var ok bool
	if f.Code, ok = httpx.IntParam(q.Get("code"), 0, 0, 1<<31-1); !ok {
		return f, domain.Invalid("code", "must be a code like 1402 (1: success)")
	}
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return f, domain.Invalid("before", "must be the id of an entry")
		}
		f.BeforeID = n
	}
	return f, nil
}

func (c *Console) journalData(q url.Values) (*journalView, error) {
	f, err := c.journalFilter(q)
	if err != nil {
		return nil, err
	}
	d := &journalView{Filter: q, Off: c.journal == nil}
	d.Entries, d.Total = c.journal.Find(f, journalPageSize)
	if len(d.Entries) == journalPageSize && d.Total > journalPageSize {
		d.Next = nextPage(q, "before", strconv.FormatInt(d.Entries[len(d.Entries)-1].ID, 10))
	}
	return d, nil
}

func (c *Console) journalPage(r *http.Request, _ httprouter.Params) (*view, error) {
	d, err := c.journalData(r.URL.Query())
	if err != nil {
		return nil, err
	}
	v := &view{Page: "journal", Title: "Request journal", Data: d, LiveSays: "requests arrive"}
	if r.URL.Query().Get("before") == "" { // the live tail follows the newest page only
		v.Live = "/console/live/journal?" + r.URL.RawQuery
	}
	return v, nil
}

func (c *Console) journalLive(r *http.Request, _ httprouter.Params) (liveFunc, error) {
	q := r.URL.Query()
	if _, err := c.journalFilter(q); err != nil {
		return nil, err
	}
	last := int64(-1)
	return func(context.Context) ([]liveFragment, error) {
		if latest := c.journal.Latest(); latest == last {
			return nil, nil // nothing new: nothing to render
		} else {
			last = latest
		}
		d, err := c.journalData(q)
		if err != nil {
			return nil, err
		}
		return c.fragments("journal", d, "entries")
	}, nil
}

type journalEntryView struct {
	Entry *sandbox.JournalEntry
	Curl  string
	// The command cannot send the request as it came: its path, query,
	// Authorization or Content-Type was longer than the journal keeps.
	CutBeforeBody bool
}

func (c *Console) journalEntryPage(r *http.Request, ps httprouter.Params) (*view, error) {
	id, err := strconv.ParseInt(ps.ByName("entry"), 10, 64)
	if err != nil {
		return nil, domain.NotFound("Journal entry")
	}
	e, ok := c.journal.Entry(id)
	if !ok {
		return nil, &domain.Error{Code: domain.ENOTFOUND, Entity: "Journal entry", Message: "Journal entry is not found (the journal keeps the latest requests only)"}
	}
	scheme := "http"
	if c.proxies.HTTPS(r) { // the address the console was opened at, behind a TLS proxy too
		scheme = "https"
	}
	return &view{Page: "journal_entry", Title: "Request " + ps.ByName("entry"),
		Data: &journalEntryView{Entry: e, Curl: curlCommand(scheme+"://"+r.Host, e),
			CutBeforeBody: e.PathTruncated || e.QueryTruncated || e.HeadersTruncated}}, nil
}

// curlCommand is a shell command sending e's request again to base: same
// method, path, query, Authorization, Content-Type and body.
func curlCommand(base string, e *sandbox.JournalEntry) string {
	target := base + e.Path
	if e.Query != "" {
		target += "?" + e.Query
	}
	parts := []string{"curl", "-sS", "-X", e.Method, shellQuote(target)}
	if e.Authorization != "" {
		parts = append(parts, "-H", shellQuote("Authorization: "+e.Authorization))
	}
	if e.ContentType != "" {
		parts = append(parts, "-H", shellQuote("Content-Type: "+e.ContentType))
	}
	if e.RequestBody != "" {
		parts = append(parts, "--data-binary", shellQuote(e.RequestBody))
	}
	return strings.Join(parts, " ")
}

// shellQuote quotes s for a POSIX shell: inside single quotes nothing is
// special but the single quote itself.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ---- fault rules ----

type faultsView struct {
	Rules      []sandbox.FaultRule
	Operations []string
	Codes      map[string][]codeChoice
	Outcomes   []string
}

type codeChoice struct {
	Code    int
	Message string
}

func (c *Console) faultsPage(*http.Request, httprouter.Params) (*view, error) {
	d := &faultsView{Rules: c.sandbox.FaultRules(), Operations: []string{"A", "B", "C"}, Codes: map[string][]codeChoice{}}
	ops := map[string]httpx.Operation{"A": httpx.OpAddToScenario, "B": httpx.OpListScenarios, "C": httpx.OpAddToCampaign}
	for op, codes := range sandbox.OperationCodes {
		for _, code := range codes {
			d.Codes[op] = append(d.Codes[op], codeChoice{code, sandbox.ForcedError(ops[op], code, "").Message})
		}
	}
	for o := range sandbox.DialOutcomes {
		d.Outcomes = append(d.Outcomes, o)
	}
	slices.Sort(d.Outcomes)
	return &view{Page: "faults", Title: "Fault rules", Data: d}, nil
}

// addFault reads a rule from the form and adds it through the admin API's
// own checks.
func (c *Console) addFault(r *http.Request, _ httprouter.Params, _ *session) (string, string, error) {
	const back = "/console/faults"
	var b sandbox.FaultBody
	b.Kind = r.PostFormValue("kind")
	b.APIKey = r.PostFormValue("api_key")
	b.Operation = r.PostFormValue("operation")
	b.ScenarioID = r.PostFormValue("scenario_id")
	b.Message = r.PostFormValue("message")
	b.Phone = r.PostFormValue("phone")
	b.Outcome = r.PostFormValue("outcome")
	b.EndpointID = r.PostFormValue("endpoint_id")
	if target := r.PostFormValue("target"); target != "" { // "A:1402": an operation and one of its codes
		op, code, _ := strings.Cut(target, ":")
		b.Operation = op
		if r.PostFormValue("kind") == sandbox.FaultError {
			n, err := strconv.Atoi(code)
			if err != nil {
				return back, "", domain.Invalid("code", "must be one of the operation's codes")
			}
			b.Code = n
		}
	}
	ints := []struct {
		name string
		dst  *int
	}{{"delay_ms", &b.DelayMS}, {"delay_max_ms", &b.DelayMaxMS}, {"status", &b.Status}, {"times", &b.Times}}
	for _, f := range ints {
		if v := strings.TrimSpace(r.PostFormValue(f.name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return back, "", domain.Invalid(f.name, "must be a whole number")
			}
			*f.dst = n
		}
	}
	if v := strings.TrimSpace(r.PostFormValue("probability")); v != "" {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return back, "", domain.Invalid("probability", "must be a number above 0, at most 1")
		}
		b.Probability = &p
	}
	rule, err := c.sandbox.AddFault(r.Context(), &b)
	if err != nil {
		return back, "", err
	}
	return back, "Rule " + rule.ID + " added.", nil
}

func (c *Console) deleteFault(_ *http.Request, ps httprouter.Params, _ *session) (string, string, error) {
	if err := c.sandbox.RemoveFault(ps.ByName("fault")); err != nil {
		return "/console/faults", "", err
	}
	return "/console/faults", "Rule " + ps.ByName("fault") + " deleted.", nil
}

// ---- sink ----

const sinkPageSize = 50

type sinkView struct {
	Messages []*sandbox.SinkMessage
	Total    int
	Next     string
}

func (c *Console) sinkPage(r *http.Request, _ httprouter.Params) (*view, error) {
	q := r.URL.Query()
	before := int64(0)
	if b := q.Get("before"); b != "" {
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return nil, domain.Invalid("before", "must be the id of a message")
		}
		before = n
	}
	all := c.sink.Find(sandbox.SinkFilter{}) // oldest first, at most sink.max_messages
	d := &sinkView{Total: len(all)}
	for i := len(all) - 1; i >= 0 && len(d.Messages) <= sinkPageSize; i-- {
		if before == 0 || all[i].ID < before {
			d.Messages = append(d.Messages, all[i])
		}
	}
	if len(d.Messages) > sinkPageSize {
		d.Messages = d.Messages[:sinkPageSize]
		d.Next = "?before=" + strconv.FormatInt(d.Messages[sinkPageSize-1].ID, 10)
	}
	return &view{Page: "sink", Title: "Webhook sink", Data: d}, nil
}

func (c *Console) resetSink(r *http.Request, _ httprouter.Params, _ *session) (string, string, error) {
	if r.PostFormValue("confirm") != "yes" {
		return "/console/sink", "", domain.Invalid("confirm", "must be ticked: resetting forgets every webhook the sink received")
	}
	c.sink.Clear("")
	return "/console/sink", "The sink was reset: every received webhook is forgotten.", nil
}

// ---- clock ----

type clockView struct {
	domain.ClockState
	Real   bool   // real calls: the time scale is fixed at 1, the time is the real one
	Offset string // how far the sandbox's now is moved, "" when it is not
}

func (c *Console) clockPage(*http.Request, httprouter.Params) (*view, error) {
	d := &clockView{ClockState: c.sandbox.ClockState(), Real: c.sandbox.RealTime()}
	if off := c.sandboxNow.Offset().Round(time.Second); off != 0 {
		d.Offset = off.String()
		if off > 0 {
			d.Offset = "+" + d.Offset
		}
	}
	return &view{Page: "clock", Title: "Clock", Data: d}, nil
}

// setClock is the clock page's three forms: the time scale, the sandbox's
// now, and back to the real time.
func (c *Console) setClock(r *http.Request, _ httprouter.Params, _ *session) (string, string, error) {
	switch {
	case r.PostFormValue("real") != "":
		if err := c.sandbox.SetSandboxOffset(0); err != nil {
			return "/console/clock", "", err
		}
		return "/console/clock", "The sandbox's clock is back on the real time.", nil
	case r.PostFormValue("now") != "":
		if err := c.sandbox.SetSandboxNow(r.PostFormValue("now")); err != nil {
			return "/console/clock", "", err
		}
		return "/console/clock", "The sandbox's time is now " + c.sandboxNow.Now().UTC().Format("2006-01-02 15:04:05 UTC") + ".", nil
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(r.PostFormValue("time_scale")), 64)
	if err != nil {
		return "/console/clock", "", domain.Invalid("time_scale", "must be a positive number")
	}
	if err := c.sandbox.SetTimeScale(&v); err != nil {
		return "/console/clock", "", err
	}
	return "/console/clock", "Simulated time now runs " + strconv.FormatFloat(v, 'g', -1, 64) + " times faster.", nil
}
