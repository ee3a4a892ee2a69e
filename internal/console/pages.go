package console

import (
	"cmp"
	"context"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/httpx"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
)

// The supervisor's pages (docs/console.md#for-the-supervisor): the
// overview, scenarios and campaigns with their progress, contacts and their
// calls, webhook deliveries.

// ---- overview ----

type tenantView struct {
	App        *domain.Application
	Wallet     domain.Wallet
	WalletHold string // why the wallet stops calls, "" when it does not
	Unfinished int64
	Scenarios  []scenarioRow
	Campaigns  []campaignRow
	Pools      []poolRow
	Spark      *sparkView // calls per minute, last hour (charts.go)
}

// campaignRow is a campaign on the overview, under its tenant.
type campaignRow struct {
	Campaign *domain.Campaign
	Scenario string // its scenario's name, or id
}

type scenarioRow struct {
	Scenario *domain.Scenario
	Live     int // calls up
	Queued   int64
	State    string // what it is doing, in words
	Held     bool
	HoldKind string
}

type poolRow struct {
	Key, Trunk     string
	Busy, Enabled  int
	Total          int
	NoEnabledLines bool
}

type overviewData struct {
	Tenants []tenantView
	Trunks  []dialer.TrunkUse
	At      time.Time
}

func (c *Console) overview(r *http.Request, _ httprouter.Params) (*view, error) {
	d, err := c.overviewData(r.Context())
	if err != nil {
		return nil, err
	}
	return &view{Page: "overview", Title: "Overview", Live: "/console/live/overview", Data: d}, nil
}

func (c *Console) overviewLive(r *http.Request, _ httprouter.Params) (liveFunc, error) {
	return func(ctx context.Context) ([]liveFragment, error) {
		d, err := c.overviewData(ctx)
		if err != nil {
			return nil, err
		}
		return c.fragments("overview", d, "tenants")
	}, nil
}

func (c *Console) overviewData(ctx context.Context) (*overviewData, error) {
	now := c.sandboxNow.Now() // the time the holds are judged at
	apps, err := c.reads.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	live := c.engine.Live()
	d := &overviewData{At: now}
	if c.sip != nil {
		d.Trunks = c.sip.TrunkUses(c.trunks)
	}
	for _, app := range apps {
		t := tenantView{App: app}
		if t.Wallet, err = c.reads.Wallet(ctx, app.ID); err != nil {
			return nil, err
		}
		if h, held := domain.WalletHold(t.Wallet, now); held {
			t.WalletHold = h.Text()
		}
		if t.Unfinished, err = c.reads.Unfinished(ctx, app.ID); err != nil {
			return nil, err
		}
		pools, err := c.reads.Pools(ctx, app.ID)
		if err != nil {
			return nil, err
		}
		for _, p := range pools {
			row := poolRow{Key: p.Key, Trunk: p.Trunk, Total: len(p.Numbers)}
			var enabled []string
			for _, h := range p.Numbers {
				if h.Enabled {
					enabled = append(enabled, h.Number)
				}
			}
			row.Enabled, row.Busy, row.NoEnabledLines = len(enabled), live.Busy(app.ID, enabled), len(enabled) == 0
			t.Pools = append(t.Pools, row)
		}
		scenarios, _, err := c.reads.ListScenarios(ctx, app.ID, "", 500, 0)
		if err != nil {
			return nil, err
		}
		for _, sc := range scenarios {
			row, err := c.scenarioRow(ctx, app, t.Wallet, sc, live, now)
			if err != nil {
				return nil, err
			}
			t.Scenarios = append(t.Scenarios, row)
		}
		campaigns, err := c.reads.ListCampaigns(ctx, app.ID, "")
		if err != nil {
			return nil, err
		}
		names := map[string]string{}
		for _, sc := range scenarios {
			names[sc.ID] = cmp.Or(sc.Name, sc.ID)
		}
		for _, cp := range campaigns {
			t.Campaigns = append(t.Campaigns, campaignRow{Campaign: cp, Scenario: cmp.Or(names[cp.ScenarioID], cp.ScenarioID)})
		}
		if t.Spark, err = c.sparkline(ctx, app.ID, now); err != nil {
			return nil, err
		}
		d.Tenants = append(d.Tenants, t)
	}
	return d, nil
}

// scenarioRow says what a scenario is doing, by the scheduler's own rule.
func (c *Console) scenarioRow(ctx context.Context, app *domain.Application, wallet domain.Wallet, sc *domain.Scenario, live engine.LiveCalls, now time.Time) (scenarioRow, error) {
	row := scenarioRow{Scenario: sc, Live: live.Scenario(app.ID, sc.ID)}
	p, err := c.reads.ContactProgress(ctx, app.ID, sc.ID, "")
	if err != nil {
		return row, err
	}
	row.Queued = p.Queued
	hold, held, err := c.reads.ScenarioHold(ctx, app.ID, wallet, sc, now)
	if err != nil {
		return row, err
	}
	switch {
	case held:
		row.Held, row.HoldKind, row.State = true, hold.Kind, hold.Text()
	case row.Live >= sc.CallConfig.MaxConcurrent:
		row.State = "dialling at capacity (max_concurrent " + strconv.Itoa(sc.CallConfig.MaxConcurrent) + ")"
	case row.Live > 0:
		row.State = "dialling"
	case p.Queued == 0:
		row.State = "idle: nothing queued"
	default:
		row.State = "ready: queued contacts wait for their next attempt"
	}
	return row, nil
}

// ---- scenarios and campaigns ----

type progressView struct {
	App        *domain.Application
	Scenario   *domain.Scenario
	Campaign   *domain.Campaign // nil on a scenario's page
	Campaigns  []*domain.Campaign
	Progress   domain.Progress
	Live       int
	PerMinute  int // calls ended in the last minute
	AnsweredPM int
	State      string
	Held       bool
	Charts     *chartsView // charts.go
	Export     *exportForm // the results export's form; nil on a live update
	// Transitions are the status changes the scenario may take now.
	Transitions []string
	// Mix is the outcome mix of the done contacts, drawn as a bar.
	Mix []mixPart
}

// mixPart is one outcome's stretch of the outcome-mix bar, in percent of
// its width (docs/console.md#scenarios-and-campaigns).
type mixPart struct {
	Outcome, Class string
	N              int64
	X, W, Pct      string
}

// outcomeMix lays the done contacts' outcomes end to end, each as wide as
// its share.
func outcomeMix(p domain.Progress) []mixPart {
	if p.Done == 0 {
		return nil
	}
	var out []mixPart
	x := 0.0
	for _, o := range p.Outcomes {
		w := 100 * float64(o.N) / float64(p.Done)
		out = append(out, mixPart{Outcome: o.Outcome, Class: strings.ToLower(o.Outcome), N: o.N,
			X: strconv.FormatFloat(x, 'f', 2, 64), W: strconv.FormatFloat(w, 'f', 2, 64), Pct: strconv.FormatFloat(w, 'f', 1, 64) + "%"})
		x += w
	}
	return out
}

// exportForm is the results export's form: the filters as sent, what they
// may be, and every problem with them (docs/console.md#results).
type exportForm struct {
	Action   string
	Filter   url.Values
	States   []string
	Outcomes []string
	Problems []domain.FieldError
}

func (c *Console) app(ctx context.Context, ps httprouter.Params) (*domain.Application, error) {
	return c.reads.App(ctx, ps.ByName("app"))
}

// appPage is a page of one tenant: app is the application the :app path
// parameter names.
type appPage func(r *http.Request, app *domain.Application, ps httprouter.Params) (*view, error)

// ofApp serves h with the application :app names resolved first: an
// unknown one is answered before h runs.
func (c *Console) ofApp(h appPage) consolePage {
	return func(r *http.Request, ps httprouter.Params) (*view, error) {
		app, err := c.app(r.Context(), ps)
		if err != nil {
			return nil, err
		}
		return h(r, app, ps)
	}
}

func (c *Console) progressData(ctx context.Context, ps httprouter.Params, withCampaign bool) (*progressView, error) {
	app, err := c.app(ctx, ps)
	if err != nil {
		return nil, err
	}
	d := &progressView{App: app}
	scenarioID := ps.ByName("scenario")
	if withCampaign {
		if d.Campaign, err = c.reads.Campaign(ctx, app.ID, ps.ByName("campaign")); err != nil {
			return nil, err
		}
		scenarioID = d.Campaign.ScenarioID
	}
	if d.Scenario, err = c.reads.Scenario(ctx, app.ID, scenarioID); err != nil {
		return nil, err
	}
	campaignID := ""
	if d.Campaign != nil {
		campaignID = d.Campaign.ID
	} else if d.Campaigns, err = c.reads.ListCampaigns(ctx, app.ID, scenarioID); err != nil {
		return nil, err
	}
	if d.Progress, err = c.reads.ContactProgress(ctx, app.ID, scenarioID, campaignID); err != nil {
		return nil, err
	}
	d.Mix = outcomeMix(d.Progress)
	d.PerMinute, d.AnsweredPM = c.engine.CallRate(app.ID, scenarioID, campaignID)
	of := "scenario " + cmp.Or(d.Scenario.Name, d.Scenario.ID)
	if d.Campaign != nil {
		of = "campaign " + cmp.Or(d.Campaign.Name, d.Campaign.ID)
	}
	if d.Charts, err = c.charts(ctx, app.ID, scenarioID, campaignID, of, c.sandboxNow.Now()); err != nil {
		return nil, err
	}
	wallet, err := c.reads.Wallet(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	live := c.engine.Live()
	row, err := c.scenarioRow(ctx, app, wallet, d.Scenario, live, c.sandboxNow.Now())
	if err != nil {
		return nil, err
	}
	d.Live, d.State, d.Held = row.Live, row.State, row.Held
	if d.Campaign != nil {
		// The scenario's calls up are shared by its campaigns: a campaign
		// shows its own contacts in a call.
		d.Live = int(d.Progress.Dialing)
		if d.Campaign.Paused {
			d.State, d.Held = (domain.Hold{Kind: domain.HoldPaused}).Text(), true
		}
	}
	return d, nil
}

// progressPage is a scenario's page, or with campaign a campaign's: the
// same progress, counted over the scenario or over the campaign.
func (c *Console) progressPage(campaign bool) consolePage {
	return func(r *http.Request, ps httprouter.Params) (*view, error) {
		d, err := c.progressData(r.Context(), ps, campaign)
		if err != nil {
			return nil, err
		}
		title, kind, id := "Scenario "+cmp.Or(d.Scenario.Name, d.Scenario.ID), "scenarios", d.Scenario.ID
		if campaign {
			title, kind, id = "Campaign "+cmp.Or(d.Campaign.Name, d.Campaign.ID), "campaigns", d.Campaign.ID
		}
		d.Transitions = c.reads.TransitionsFrom(d.Scenario.Status)
		base := "/apps/" + url.PathEscape(d.App.APIKey) + "/" + kind + "/" + url.PathEscape(id)
		d.Export = &exportForm{Action: "/console" + base + "/results.csv", Filter: url.Values{},
			States: []string{domain.ContactQueued, domain.ContactDialing, domain.ContactDone}}
		if d.Export.Outcomes, err = c.reads.Outcomes(r.Context(), d.App.ID); err != nil {
			return nil, err
		}
		return &view{Page: "progress", Title: title, Data: d, Live: "/console/live" + base}, nil
	}
}

// results downloads a scenario's results as CSV, or a campaign's: the
// admin API's export (docs/admin.md#results-as-csv), behind the session.
// Bad filters show the page again, the form as sent and every problem
// beside it.
func (c *Console) results(campaign bool) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		c.headers(w)
		s := c.sessions.get(r, c.now())
		if s == nil {
			http.Redirect(w, r, "/console/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		defer c.recoverPanic(w, r, s)
		q := r.URL.Query()
		if err := checkFields(q); err != nil {
			c.fail(w, r, s, err)
			return
		}
		app, err := c.app(r.Context(), ps)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		f, err := c.reads.ResultFilter(q)
		var bad *domain.Error
		if errors.As(err, &bad) && bad.Code == domain.EINVALID {
			v, err := c.progressPage(campaign)(r, ps)
			if err != nil {
				c.fail(w, r, s, err)
				return
			}
			export := v.Data.(*progressView).Export
			export.Filter, export.Problems = q, bad.Details
			c.render(w, http.StatusBadRequest, layoutData{view: *v, CSRF: s.csrf, SignedIn: true, Status: http.StatusBadRequest})
			return
		}
		d, err := c.reads.Results(r.Context(), app, ps.ByName("scenario"), ps.ByName("campaign"), f)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		d.Serve(w, r, c.log)
	}
}

// progressLive is the live stream of progressPage's counters.
func (c *Console) progressLive(campaign bool) func(r *http.Request, ps httprouter.Params) (liveFunc, error) {
	return func(r *http.Request, ps httprouter.Params) (liveFunc, error) {
		return func(ctx context.Context) ([]liveFragment, error) {
			d, err := c.progressData(ctx, ps, campaign)
			if err != nil {
				return nil, err
			}
			return c.fragments("progress", d, "counters", "charts")
		}, nil
	}
}

func (c *Console) pauseCampaign(paused bool) consoleAction {
	return func(r *http.Request, ps httprouter.Params, _ *session) (string, string, error) {
		back := "/console/apps/" + url.PathEscape(ps.ByName("app")) + "/campaigns/" + url.PathEscape(ps.ByName("campaign"))
		app, err := c.app(r.Context(), ps)
		if err != nil {
			return "", "", err
		}
		if err := c.actions.SetCampaignPaused(r.Context(), app.ID, ps.ByName("campaign"), paused); err != nil {
			return "", "", err
		}
		if paused {
			return back, "Paused: no new call starts; calls up finish.", nil
		}
		return back, "Resumed.", nil
	}
}

// stopCampaign stops a campaign: its queued contacts end CANCELED
// (docs/admin.md#routes).
func (c *Console) stopCampaign(r *http.Request, ps httprouter.Params, _ *session) (string, string, error) {
	back := "/console/apps/" + url.PathEscape(ps.ByName("app")) + "/campaigns/" + url.PathEscape(ps.ByName("campaign"))
	app, err := c.app(r.Context(), ps)
	if err != nil {
		return "", "", err
	}
	n, err := c.actions.StopCampaign(r.Context(), app.ID, ps.ByName("campaign"))
	if err != nil {
		return back, "", err
	}
	return back, "Stopped: " + thousands(int64(n)) + " queued contacts ended CANCELED; calls up finish.", nil
}

// createCampaign creates a campaign on the scenario, paused unless "start"
// is ticked, and goes to its page.
func (c *Console) createCampaign(r *http.Request, ps httprouter.Params, _ *session) (string, string, error) {
	back := "/console/apps/" + url.PathEscape(ps.ByName("app")) + "/scenarios/" + url.PathEscape(ps.ByName("scenario"))
	app, err := c.app(r.Context(), ps)
	if err != nil {
		return "", "", err
	}
	k := domain.Campaign{ID: strings.TrimSpace(r.PostFormValue("id")), Name: strings.TrimSpace(r.PostFormValue("name")),
		ScenarioID: ps.ByName("scenario"), Paused: r.PostFormValue("start") == ""}
	if k.ID == "" {
		k.ID = domain.NewV7()
	}
	made, err := c.actions.CreateCampaign(r.Context(), app.ID, k)
	if err != nil {
		return back, "", err
	}
	next := "/console/apps/" + url.PathEscape(app.APIKey) + "/campaigns/" + url.PathEscape(made.ID)
	if made.Paused {
		return next, "Campaign created, paused: add its contacts, then resume it to start.", nil
	}
	return next, "Campaign created and started.", nil
}

// transitionScenario moves the scenario along the transition the form
// names: submit, approve, reject, edit.
func (c *Console) transitionScenario(r *http.Request, ps httprouter.Params, _ *session) (string, string, error) {
	back := "/console/apps/" + url.PathEscape(ps.ByName("app")) + "/scenarios/" + url.PathEscape(ps.ByName("scenario"))
	app, err := c.app(r.Context(), ps)
	if err != nil {
		return "", "", err
	}
	name := r.PostFormValue("transition")
	if err := c.actions.TransitionScenario(r.Context(), app.ID, ps.ByName("scenario"), name); err != nil {
		return back, "", err
	}
	return back, "Scenario: " + name + " done.", nil
}

// ---- contacts ----

// contactsScan bounds how many contacts one page of a filtered list looks
// through, so it answers at once with millions stored.
const contactsScan = 10_000

type contactsView struct {
	App      *domain.Application
	Filter   url.Values
	Outcomes []string // what the tenant's contacts ended with, from the data
	States   []string
	Contacts []*domain.ContactRecord
	Next     string // the next page's query, "" on the last
	Searched bool   // a filtered page that looked through contactsScan contacts
	Problems []domain.FieldError
}

func (c *Console) contactsPage(r *http.Request, app *domain.Application, _ httprouter.Params) (*view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	d := &contactsView{App: app, Filter: q, States: []string{domain.ContactQueued, domain.ContactDialing, domain.ContactDone}}
	var err error
	if d.Outcomes, err = c.reads.Outcomes(ctx, app.ID); err != nil {
		return nil, err
	}
	f, err := c.contactFilter(q)
	var bad *domain.Error
	if errors.As(err, &bad) && bad.Code == domain.EINVALID {
		// The form stays, as sent, with every problem beside it.
		d.Problems = bad.Details
		return &view{Page: "contacts", Title: "Contacts of " + app.Name, Data: d, Status: http.StatusBadRequest}, nil
	}
	list, next, err := c.reads.Contacts(ctx, app.ID, f)
	if err != nil {
		return nil, err
	}
	d.Contacts = list
	if next != "" {
		d.Next = nextPage(q, "cursor", next)
		d.Searched = len(list) < f.Limit
	}
	return &view{Page: "contacts", Title: "Contacts of " + app.Name, Data: d}, nil
}

// contactFilter reads the contacts page's filter, its phone in E.164 as
// the admin API would store it.
func (c *Console) contactFilter(q url.Values) (domain.ContactFilter, error) {
	f := domain.ContactFilter{ScenarioID: q.Get("scenario_id"), CampaignID: q.Get("campaign_id"), State: q.Get("state"),
		Outcome: q.Get("outcome"), ScanLimit: contactsScan}
	// Every problem is named, not only the first (docs/console.md#contacts).
	var bad []domain.FieldError
	note := func(err error) {
		var e *domain.Error
		if errors.As(err, &e) {
			bad = append(bad, e.Details...)
		}
	}
	if !domain.ContactStates[f.State] {
		bad = append(bad, domain.FieldError{Field: "state", Reason: "must be queued, dialing or done"})
	}
	var err error
	if p := q.Get("phone"); p != "" {
		if f.Phone, err = c.reads.ContactPhone(p); err != nil {
			note(err)
		}
	}
	if f.From, err = dateParam(q, "from", 0); err != nil {
		note(err)
	}
	if f.To, err = dateParam(q, "to", 1); err != nil {
		note(err)
	}
	if f.Limit, err = httpx.LimitParam(q); err != nil {
		note(err)
	}
	if cur := q.Get("cursor"); cur != "" {
		if f.Cursor, err = strconv.ParseInt(cur, 10, 64); err != nil || f.Cursor <= 0 {
			bad = append(bad, domain.FieldError{Field: "cursor", Reason: "must be the cursor of an earlier page"})
		}
	}
	if bad != nil {
		return f, domain.ValidationError(bad...)
	}
	return f, nil
}

// nextPage is the query of the page after q's: q with key set to value.
func nextPage(q url.Values, key, value string) string {
	nq := url.Values{}
	for k, v := range q {
		nq[k] = v
	}
	nq.Set(key, value)
	return "?" + nq.Encode()
}

// dateParam reads a date (2006-01-02, UTC) or an RFC 3339 time; a date
// plus addDays (1 for "to": the whole day is in).
func dateParam(q url.Values, name string, addDays int) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t.AddDate(0, 0, addDays), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, domain.Invalid(name, "must be a date like 2026-01-31")
}

type contactView struct {
	App     *domain.Application
	Contact *domain.ContactRecord
	Calls   []callView
}

// callView is one call of a contact's page, with its transcript read for
// the conversation it shows (docs/console.md#contacts).
type callView struct {
	domain.CallRecord
	Turns []turn
}

// turn is one thing said on a call, as the transcript stores it.
type turn struct {
	Speaker string    `json:"speaker"`
	Text    string    `json:"text"`
	At      time.Time `json:"at"`
}

func (c *Console) contactPage(r *http.Request, app *domain.Application, ps httprouter.Params) (*view, error) {
	d, err := c.contactData(r.Context(), app, ps)
	if err != nil {
		return nil, err
	}
	return &view{Page: "contact", Title: "Contact " + d.Contact.Phone, Data: d,
		Live: "/console/live/apps/" + url.PathEscape(app.APIKey) + "/contacts/" + url.PathEscape(d.Contact.ID)}, nil
}

// contactLive is the live stream of a contact's page: its state and its
// calls, as they are placed and end.
func (c *Console) contactLive(r *http.Request, ps httprouter.Params) (liveFunc, error) {
	app, err := c.app(r.Context(), ps)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context) ([]liveFragment, error) {
		d, err := c.contactData(ctx, app, ps)
		if err != nil {
			return nil, err
		}
		return c.fragments("contact", d, "contact-facts", "contact-calls")
	}, nil
}

func (c *Console) contactData(ctx context.Context, app *domain.Application, ps httprouter.Params) (*contactView, error) {
	k, calls, err := c.reads.Contact(ctx, app.ID, ps.ByName("contact"))
	if err != nil {
		return nil, err
	}
	views := make([]callView, len(calls))
	for i := range calls {
		if calls[i].Recorded { // the player's source: the console's own route, behind the session
			calls[i].RecordingURL = "/console/apps/" + url.PathEscape(app.APIKey) + "/contacts/" + url.PathEscape(k.ID) +
				"/calls/" + url.PathEscape(calls[i].ID) + "/recording"
		}
		views[i].CallRecord = calls[i]
		if err := json.Unmarshal(calls[i].Transcript, &views[i].Turns); err != nil {
			return nil, fmt.Errorf("call %s: transcript: %w", calls[i].ID, err)
		}
	}
	return &contactView{App: app, Contact: k, Calls: views}, nil
}

// ---- webhooks ----

type endpointRow struct {
	Endpoint *domain.WebhookEndpoint
	States   map[string]int64
}

type webhooksView struct {
	App       *domain.Application
	Endpoints []endpointRow
	Filter    url.Values
	States    []string
	Messages  []*domain.WebhookMessage
	Next      string
	Since     string // a default for "recover dead since"
}

func (c *Console) webhooksPage(r *http.Request, app *domain.Application, _ httprouter.Params) (*view, error) {
	ctx := r.Context()
	q := r.URL.Query()
	d := &webhooksView{App: app, Filter: q, States: []string{domain.MessagePending, domain.MessageDelivered, domain.MessageDead},
		Since: c.now().UTC().Add(-24 * time.Hour).Format("2006-01-02T15:04")}
	eps, err := c.reads.Endpoints(ctx, app.ID)
	if err != nil {
		return nil, err
	}
	for _, e := range eps {
		states, err := c.reads.MessageStates(ctx, e.ID)
		if err != nil {
			return nil, err
		}
		d.Endpoints = append(d.Endpoints, endpointRow{e, states})
	}
	f := domain.MessageFilter{EndpointID: q.Get("endpoint_id"), State: q.Get("state")}
	if !domain.MessageStates[f.State] {
		return nil, domain.Invalid("state", "must be pending, delivered or dead")
	}
	if f.CursorPage, err = httpx.CursorPageParams(q); err != nil {
		return nil, err
	}
	list, next, err := c.reads.Messages(ctx, app.ID, f)
	if err != nil {
		return nil, err
	}
	d.Messages = list
	if next != "" {
		d.Next = nextPage(q, "cursor", next)
	}
	return &view{Page: "webhooks", Title: "Webhooks of " + app.Name, Data: d}, nil
}

type messageView struct {
	App      *domain.Application
	Message  *domain.WebhookMessage
	Attempts []domain.WebhookAttempt
}

func (c *Console) messagePage(r *http.Request, app *domain.Application, ps httprouter.Params) (*view, error) {
	m, attempts, err := c.reads.Message(r.Context(), app.ID, ps.ByName("message"))
	if err != nil {
		return nil, err
	}
	return &view{Page: "message", Title: "Webhook message " + m.ID, Data: &messageView{App: app, Message: m, Attempts: attempts}}, nil
}

func (c *Console) redeliver(r *http.Request, ps httprouter.Params, _ *session) (string, string, error) {
	app, err := c.app(r.Context(), ps)
	if err != nil {
		return "", "", err
	}
	back := "/console/apps/" + url.PathEscape(app.APIKey) + "/webhook-messages/" + url.PathEscape(ps.ByName("message"))
	if err := c.actions.Redeliver(r.Context(), app.ID, ps.ByName("message")); err != nil {
		return "", "", err
	}
	return back, "Queued for delivery now, with the same webhook-id.", nil
}

func (c *Console) recoverDead(r *http.Request, ps httprouter.Params, _ *session) (string, string, error) {
	app, err := c.app(r.Context(), ps)
	if err != nil {
		return "", "", err
	}
	back := "/console/apps/" + url.PathEscape(app.APIKey) + "/webhooks"
	e, err := c.reads.Endpoint(r.Context(), app.ID, ps.ByName("endpoint"))
	if err != nil {
		return "", "", err
	}
	// datetime-local sends minutes without a zone: read as UTC, as shown.
	since, err := time.Parse("2006-01-02T15:04", r.PostFormValue("since"))
	if err != nil {
		if since, err = time.Parse(time.RFC3339, r.PostFormValue("since")); err != nil {
			return back, "", domain.Invalid("since", "must be a time like 2026-01-31T08:00 (UTC)")
		}
	}
	n, err := c.actions.RecoverFailed(r.Context(), app.ID, e.ID, since)
	if err != nil {
		return "", "", err
	}
	return back, "Recovered " + strconv.FormatInt(n, 10) + " dead message(s): back in the outbox, due now.", nil
}
