package console

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/httpx"
	"dialbox/internal/importer"
	"dialbox/internal/proxy"
	"dialbox/internal/sandbox"
	"dialbox/internal/sandboxclock"
	"dialbox/internal/script"

	"github.com/julienschmidt/httprouter"
)

// Console is the web console at /console/ (docs/console.md): HTML pages
// over the admin API's services (Reads, Actions, Sandbox) and the
// sandbox's parts, signed in with the admin token. This file holds the
// type, its routes, rendering and the security headers; sessions and CSRF
// are in session.go, the supervisor's pages in pages.go, the QA engineer's
// in qa.go, live updates in live.go.
type Console struct {
	reads   Reads
	actions Actions
	sandbox Sandbox
	engine  Engine
	trial   Trial
	sip     TrunkUses // nil with the simulated dialer
	trunks  []string  // sip.trunks' names, in order
	// The sandbox's parts the admin API reads too: the request journal
	// (nil when off), the sink, and the time the rules of calling read.
	journal    *sandbox.Journal
	sink       *sandbox.Sink
	sandboxNow *sandboxclock.Clock
	proxies    proxy.Trusted // whether a request came over HTTPS
	log        *slog.Logger
	now        func() time.Time

	pages    map[string]*template.Template
	static   http.Handler
	sessions *sessions
	// secureCookies is console.secure_cookies: every cookie Secure.
	secureCookies bool
	// liveEvery is how often a live page's stream looks for changes.
	liveEvery time.Duration
	// importer reads uploaded contacts, as `dialbox import` does; uploads
	// keeps their skipped rows.
	importer *importer.Importer
	uploads  uploads

	stopOnce sync.Once
	stop     chan struct{} // closed when the server shuts down: streams end
}

// The console asks the admin API's services what it shows and does, so a
// page shows and a form does what the API would.

// Reads are the supervisor's pages' reads; a missing record is
// already the error the page shows.
type Reads interface {
	ListApps(ctx context.Context) ([]*domain.Application, error)
	App(ctx context.Context, key string) (*domain.Application, error)
	Wallet(ctx context.Context, appID int64) (domain.Wallet, error)
	Unfinished(ctx context.Context, appID int64) (int64, error)
	Pools(ctx context.Context, appID int64) ([]*domain.Pool, error)
	ListScenarios(ctx context.Context, appID int64, status string, limit, offset int) ([]*domain.Scenario, int, error)
	Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error)
	ContactProgress(ctx context.Context, appID int64, scenarioID, campaignID string) (domain.Progress, error)
	ScenarioHold(ctx context.Context, appID int64, wallet domain.Wallet, sc *domain.Scenario, now time.Time) (domain.Hold, bool, error)
	ListCampaigns(ctx context.Context, appID int64, scenarioID string) ([]*domain.Campaign, error)
	Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error)
	ContactPhone(phone string) (string, error)
	Contacts(ctx context.Context, appID int64, f domain.ContactFilter) ([]*domain.ContactRecord, string, error)
	Outcomes(ctx context.Context, appID int64) ([]string, error)
	CallCounts(ctx context.Context, appID int64, scenarioID, campaignID string, since time.Time) ([]domain.CallCount, error)
	Contact(ctx context.Context, appID int64, id string) (*domain.ContactRecord, []domain.CallRecord, error)
	Recording(ctx context.Context, appKey, contactID, callID string) (*httpx.ServedFile, error)
	Endpoints(ctx context.Context, appID int64) ([]*domain.WebhookEndpoint, error)
	Endpoint(ctx context.Context, appID int64, id string) (*domain.WebhookEndpoint, error)
	MessageStates(ctx context.Context, endpointID string) (map[string]int64, error)
	Messages(ctx context.Context, appID int64, f domain.MessageFilter) ([]*domain.WebhookMessage, string, error)
	Message(ctx context.Context, appID int64, id string) (*domain.WebhookMessage, []domain.WebhookAttempt, error)
	AuditLog(ctx context.Context, before int64, limit int) ([]domain.AuditEntry, error)
	TransitionsFrom(status string) []string
	ResultFilter(q url.Values) (domain.ResultFilter, error)
	Results(ctx context.Context, app *domain.Application, scenarioID, campaignID string, f domain.ResultFilter) (*httpx.Download, error)
}

// Actions are the supervisor's forms; each wakes whoever the change
// concerns.
type Actions interface {
	Audit(ctx context.Context, e domain.AuditEntry) error
	SetCampaignPaused(ctx context.Context, appID int64, id string, paused bool) error
	StopCampaign(ctx context.Context, appID int64, id string) (int, error)
	CreateCampaign(ctx context.Context, appID int64, k domain.Campaign) (*domain.Campaign, error)
	TransitionScenario(ctx context.Context, appID int64, id, name string) error
	CreateScenario(ctx context.Context, appID int64, b *domain.ScenarioChange) (*domain.Scenario, error)
	UpdateScenario(ctx context.Context, appID int64, id string, b *domain.ScenarioChange) error
	Redeliver(ctx context.Context, appID int64, id string) error
	RecoverFailed(ctx context.Context, appID int64, endpointID string, since time.Time) (int64, error)
}

// Sandbox is the sign-in's token check and the QA engineer's
// clock and fault rules.
type Sandbox interface {
	CheckToken(r *http.Request, token string, now time.Time) (right bool, retryAfter time.Duration)
	ClockState() domain.ClockState
	RealTime() bool
	SetTimeScale(scale *float64) error
	SetSandboxNow(value string) error
	SetSandboxOffset(seconds int64) error
	AddFault(ctx context.Context, b *sandbox.FaultBody) (*sandbox.FaultRule, error)
	FaultRules() []sandbox.FaultRule
	RemoveFault(id string) error
}

// TrunkUses is what the overview shows of the SIP dialer: each trunk's
// calls up against its limit.
type TrunkUses interface {
	TrunkUses(names []string) []dialer.TrunkUse
}

// Engine is what the console shows of the engine: calls up, and
// calls per minute.
type Engine interface {
	Live() engine.LiveCalls
	CallRate(appID int64, scenarioID, campaignID string) (ended, answered int)
}

// Trial runs the script being edited on the simulated callee, without a
// call (docs/console.md#trying-a-script); ran is false when a machine
// answered a script with no voicemail step.
type Trial interface {
	Try(ctx context.Context, s script.Script, callee dialer.Callee, start time.Time) (out script.Outcome, ran bool)
}

//go:embed templates static
var consoleFiles embed.FS

// consoleCSP lets pages load only the console's own files: no inline
// script or style, no frames, forms posting only here.
const consoleCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"

// Parts is what the console is built from.
type Parts struct {
	// The admin API's services, in three parts.
	Reads   Reads
	Actions Actions
	Sandbox Sandbox
	Engine  Engine
	Trial   Trial     // the scenario editor's "Try it"
	SIP     TrunkUses // nil with the simulated dialer
	Trunks  []string  // sip.trunks' names, in order
	// The sandbox's parts the admin API reads too.
	Journal    *sandbox.Journal // nil when journal.max_entries is 0
	Sink       *sandbox.Sink
	SandboxNow *sandboxclock.Clock
	Proxies    proxy.Trusted
	Config     config.ConsoleConfig
	Log        *slog.Logger
	Now        func() time.Time // the wall clock sessions and wrong tokens are judged by
	Importer   *importer.Importer
}

// New builds the console and parses its templates.
func New(p Parts) (*Console, error) {
	c := &Console{reads: p.Reads, actions: p.Actions, sandbox: p.Sandbox, engine: p.Engine, trial: p.Trial, sip: p.SIP, trunks: p.Trunks, journal: p.Journal, sink: p.Sink,
		sandboxNow: p.SandboxNow, proxies: p.Proxies, log: p.Log, now: p.Now,
		pages: map[string]*template.Template{}, sessions: newSessions(p.Config.SessionMaxAge.Duration), secureCookies: p.Config.SecureCookies,
		liveEvery: time.Second, stop: make(chan struct{}), importer: p.Importer}
	layout, err := template.New("layout.html").Funcs(consoleFuncs).ParseFS(consoleFiles, "templates/layout.html", "templates/*.tmpl")
	if err != nil {
		return nil, err
	}
	names, err := fs.Glob(consoleFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(consoleFiles, name)
		if err != nil {
			return nil, err
		}
		c.pages[base] = t
	}
	static, err := fs.Sub(consoleFiles, "static")
	if err != nil {
		return nil, err
	}
	c.static = http.StripPrefix("/console/static/", http.FileServerFS(static))
	return c, nil
}

// Stop ends every live stream, so a graceful stop does not wait for them.
func (c *Console) Stop() {
	c.stopOnce.Do(func() {
		close(c.stop)
		c.uploads.removeAll()
	})
}

// Routes mounts the console's pages and forms on r.
func (c *Console) Routes(r *httprouter.Router) {
	const p = "/console"
	const app = p + "/apps/:app"
	r.GET(p, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		http.Redirect(w, r, p+"/", http.StatusSeeOther)
	})
	r.GET(p+"/static/*file", func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		c.headers(w)
		w.Header().Set("Cache-Control", "no-cache") // revalidated: a new binary may bring new files
		c.static.ServeHTTP(w, r)
	})
	r.GET(p+"/signin", c.signinPage)
	r.POST(p+"/signin", c.signin)
	r.POST(p+"/signout", c.action(c.signout))

	r.GET(p+"/", c.page(c.overview))
	r.GET(p+"/live/overview", c.live(c.overviewLive))
	r.GET(app+"/scenarios/:scenario", c.page(c.progressPage(false)))
	r.GET(p+"/live/apps/:app/scenarios/:scenario", c.live(c.progressLive(false)))
	r.GET(app+"/scenarios/:scenario/results.csv", c.results(false))
	r.GET(app+"/campaigns/:campaign", c.page(c.progressPage(true)))
	r.GET(app+"/campaigns/:campaign/results.csv", c.results(true))
	r.GET(p+"/live/apps/:app/campaigns/:campaign", c.live(c.progressLive(true)))
	r.POST(app+"/campaigns/:campaign/pause", c.action(c.pauseCampaign(true)))
	r.POST(app+"/campaigns/:campaign/resume", c.action(c.pauseCampaign(false)))
	r.POST(app+"/campaigns/:campaign/stop", c.action(c.stopCampaign))
	r.POST(app+"/scenarios/:scenario/campaigns", c.action(c.createCampaign))
	r.POST(app+"/scenarios/:scenario/status", c.action(c.transitionScenario))
	r.POST(app+"/scenarios/:scenario/upload", c.upload(false))
	r.POST(app+"/campaigns/:campaign/upload", c.upload(true))
	r.GET(p+"/uploads/:upload/skipped.csv", c.skippedRows)
	r.GET(app+"/new-scenario", c.page(c.scenarioFormPage(false)))
	r.POST(app+"/new-scenario", c.saveScenario(false))
	r.POST(app+"/new-scenario/try", c.tryScript(false))
	r.POST(app+"/scenarios/:scenario/try", c.tryScript(true))
	r.GET(app+"/scenarios/:scenario/edit", c.page(c.scenarioFormPage(true)))
	r.POST(app+"/scenarios/:scenario/edit", c.saveScenario(true))
	r.GET(app+"/contacts", c.page(c.ofApp(c.contactsPage)))
	r.GET(app+"/contacts/:contact", c.page(c.ofApp(c.contactPage)))
	r.GET(p+"/live/apps/:app/contacts/:contact", c.live(c.contactLive))
	r.GET(app+"/contacts/:contact/calls/:call/recording", c.recording)
	r.GET(app+"/webhooks", c.page(c.ofApp(c.webhooksPage)))
	r.POST(app+"/webhooks/:endpoint/recover", c.action(c.recoverDead))
	r.GET(app+"/webhook-messages/:message", c.page(c.ofApp(c.messagePage)))
	r.POST(app+"/webhook-messages/:message/redeliver", c.action(c.redeliver))

	r.GET(p+"/journal", c.page(c.journalPage))
	r.GET(p+"/live/journal", c.live(c.journalLive))
	r.GET(p+"/journal/:entry", c.page(c.journalEntryPage))
	r.GET(p+"/faults", c.page(c.faultsPage))
	r.POST(p+"/faults", c.action(c.addFault))
	r.POST(p+"/faults/:fault/delete", c.action(c.deleteFault))
	r.GET(p+"/sink", c.page(c.sinkPage))
	r.POST(p+"/sink/reset", c.action(c.resetSink))
	r.GET(p+"/clock", c.page(c.clockPage))
	r.GET(p+"/audit", c.page(c.auditPage))
	r.POST(p+"/clock", c.action(c.setClock))
}

// view is what a page handler hands to the layout.
type view struct {
	Page  string // template name (templates/<Page>.html)
	Title string
	Live  string // the page's stream, if it updates live
	// LiveSays what the live updates follow, for the status line: "calls
	// progress" when empty.
	LiveSays string
	Data     any
	Status   int // the answer's status; 0: 200
}

// layoutData is what every page's template gets.
type layoutData struct {
	view
	CSRF     string
	Flash    *flash
	SignedIn bool
	Status   int // an error page's HTTP status
	// SandboxNow is the sandbox's time when the admin clock moved it, so
	// every page says the rules are judged at another time; nil otherwise.
	SandboxNow *time.Time
}

// consolePage serves a GET: the view to render, or an error for
// httpx.ConsoleError to explain.
type consolePage func(r *http.Request, ps httprouter.Params) (*view, error)

// consoleAction serves a form POST: where to go next (POST-redirect-GET)
// and what to tell the user there.
type consoleAction func(r *http.Request, ps httprouter.Params, s *session) (next string, done string, err error)

// Bounds on what a browser sends the console (docs/console.md#security):
// each form field and filter (a fault rule's message is the longest any
// form needs), and a form's whole body, so nothing a client sends is
// echoed back or kept in a session whole.
const (
	consoleMaxField     = 1000
	consoleMaxFieldName = 40 // the console's own are a few letters
	consoleMaxForm      = 64 << 10
)

// consoleLongFields are the fields that hold text rather than a value: a
// scenario's content and script, bounded by the form's size alone.
var consoleLongFields = map[string]bool{"content": true, "script": true}

// checkFields refuses a field or filter over consoleMaxField (but for
// consoleLongFields), or with a name over consoleMaxFieldName, naming it
// without quoting its value.
func checkFields(v url.Values) error {
	for name, values := range v {
		for _, s := range values {
			if len(name) > consoleMaxFieldName || (len(s) > consoleMaxField && !consoleLongFields[name]) {
				field := name
				if len(name) > consoleMaxFieldName {
					field = "the field " + domain.QuotedPrefix(name)
				}
				return domain.Invalid(field, "is longer than "+thousands(consoleMaxField)+" bytes")
			}
		}
	}
	return nil
}

// readForm reads a form's body (at most consoleMaxForm bytes) and checks
// its fields and its query's; when it cannot, it answers the request with
// the error page and returns false.
func (c *Console) readForm(w http.ResponseWriter, r *http.Request, s *session) bool {
	r.Body = http.MaxBytesReader(w, r.Body, consoleMaxForm)
	err := r.ParseForm()
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		d := layoutData{view: view{Page: "error", Title: "Too large",
			Data: "This form is larger than " + strconv.Itoa(consoleMaxForm>>10) + " KiB: nothing was done."}, Status: 413}
		if s != nil {
			d.CSRF, d.SignedIn = s.csrf, true
		}
		c.render(w, http.StatusRequestEntityTooLarge, d)
		return false
	case err != nil:
		err = domain.Invalid("form", "could not be read")
	default:
		err = checkFields(r.Form)
	}
	if err != nil {
		c.fail(w, r, s, err)
		return false
	}
	return true
}

// headers are the security headers of every console answer.
func (c *Console) headers(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
}

func (c *Console) page(h consolePage) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		c.headers(w)
		s := c.sessions.get(r, c.now())
		if s == nil {
			http.Redirect(w, r, "/console/signin?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		defer c.recoverPanic(w, r, s)
		if err := checkFields(r.URL.Query()); err != nil {
			c.fail(w, r, s, err)
			return
		}
		v, err := h(r, ps)
		if err != nil {
			c.fail(w, r, s, err)
			return
		}
		c.render(w, cmp.Or(v.Status, http.StatusOK), layoutData{view: *v, CSRF: s.csrf, Flash: s.takeFlash(), SignedIn: true})
	}
}

// recording serves a call's recording to the contact page's player: the
// admin API's download, behind the console's session instead of the token.
func (c *Console) recording(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
	c.headers(w)
	s := c.sessions.get(r, c.now())
	if s == nil {
		c.fail(w, r, nil, domain.NotFound("Recording"))
		return
	}
	f, err := c.reads.Recording(r.Context(), ps.ByName("app"), ps.ByName("contact"), ps.ByName("call"))
	if err == nil {
		err = f.Serve(w)
	}
	if err != nil {
		c.fail(w, r, s, err)
	}
}

// formSession is the session of a form's POST, its form read and its CSRF
// token checked; nil when the request is already answered (signed out,
// a form too large or not read, no CSRF token).
func (c *Console) formSession(w http.ResponseWriter, r *http.Request) *session {
	c.headers(w)
	s := c.sessions.get(r, c.now())
	if s == nil {
		c.render(w, http.StatusForbidden, layoutData{view: view{Page: "error", Title: "Signed out",
			Data: "You are not signed in (or the session expired): sign in again, then repeat the action."}, Status: 403})
		return nil
	}
	if !c.readForm(w, r, s) {
		return nil
	}
	if !s.checkCSRF(r) {
		c.render(w, http.StatusForbidden, layoutData{view: view{Page: "error", Title: "Refused",
			Data: "This form was refused: it did not carry the console's security token. Reload the page and try again."},
			CSRF: s.csrf, SignedIn: true, Status: 403})
		return nil
	}
	return s
}

func (c *Console) action(h consoleAction) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		s := c.formSession(w, r)
		if s == nil {
			return
		}
		defer c.recoverPanic(w, r, s)
		next, done, err := h(r, ps, s)
		if err != nil {
			status, msg, known := httpx.ConsoleError(err)
			if !known {
				c.log.Error("console action failed", "path", r.URL.Path, "err", err)
			}
			c.audit(r, s, ps.ByName("app"), "refused: "+msg)
			if next == "" || status >= 500 {
				c.fail(w, r, s, err)
				return
			}
			s.setFlash(&flash{Failed: true, Text: msg})
		} else {
			c.audit(r, s, ps.ByName("app"), cmp.Or(done, "done"))
			if done != "" {
				s.setFlash(&flash{Text: done})
			}
		}
		http.Redirect(w, r, next, http.StatusSeeOther)
	}
}

// audit writes an action of the session s to the audit log: its path
// (which names the records it acted on), the tenant's key and how it went.
// A log that cannot be written is logged, the action stands.
func (c *Console) audit(r *http.Request, s *session, appKey, detail string) {
	// An action done is logged even when its client has gone.
	err := c.actions.Audit(context.WithoutCancel(r.Context()), domain.AuditEntry{Actor: s.who, Action: r.Method + " " + r.URL.Path, AppKey: appKey, Detail: detail})
	if err != nil {
		c.log.Error("audit log not written", "path", r.URL.Path, "err", err)
	}
}

func (c *Console) recoverPanic(w http.ResponseWriter, r *http.Request, s *session) {
	if v := recover(); v != nil {
		if v == http.ErrAbortHandler { // a download cut short: the connection is to be cut
			panic(v)
		}
		c.log.Error("panic serving console request", "path", r.URL.Path, "panic", v)
		c.fail(w, r, s, fmt.Errorf("panic: %v", v))
	}
}

// fail renders the error page for err.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status, msg, known := httpx.ConsoleError(err)
	if !known {
		c.log.Error("console request failed", "path", r.URL.Path, "err", err)
	}
	d := layoutData{view: view{Page: "error", Title: http.StatusText(status), Data: msg}, Status: status}
	if s != nil {
		d.CSRF, d.SignedIn = s.csrf, true
	}
	c.render(w, status, d)
}

// render writes a whole page; a template error becomes a plain 500.
func (c *Console) render(w http.ResponseWriter, status int, d layoutData) {
	if d.SignedIn && c.sandboxNow.Offset() != 0 {
		now := c.sandboxNow.Now()
		d.SandboxNow = &now
	}
	var buf bytes.Buffer
	if err := c.pages[d.Page].ExecuteTemplate(&buf, "layout", d); err != nil {
		c.log.Error("console template failed", "page", d.Page, "err", err)
		http.Error(w, "Internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fragment renders one named template of a page, for a live update.
func (c *Console) fragment(page, name string, data any) (string, error) {
	var buf bytes.Buffer
	err := c.pages[page].ExecuteTemplate(&buf, name, data)
	return buf.String(), err
}

// NotFoundPage answers a /console/ path that is no page.
func (c *Console) NotFoundPage(w http.ResponseWriter, r *http.Request) {
	c.headers(w)
	s := c.sessions.get(r, c.now())
	d := layoutData{view: view{Page: "error", Title: "Not found", Data: "There is no such page in the console."}, Status: 404}
	if s != nil {
		d.CSRF, d.SignedIn = s.csrf, true
	}
	c.render(w, http.StatusNotFound, d)
}

// consoleFuncs are the templates' helpers.
var consoleFuncs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"timep": func(t *time.Time) string {
		if t == nil {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"num": func(n any) string {
		switch x := n.(type) {
		case int:
			return thousands(int64(x))
		case int64:
			return thousands(x)
		}
		return "0"
	},
	// answerRate is short, so it sits on one line among the counters; the
	// page says what it is of.
	"answerRate": func(p domain.Progress) string {
		pct, ok := p.Answered()
		if !ok {
			return "—"
		}
		return strconv.FormatFloat(pct, 'f', 1, 64) + "%"
	},
	// clock writes seconds as minutes and seconds (1:05).
	"clock": func(seconds int64) string {
		return strconv.FormatInt(seconds/60, 10) + ":" + fmt.Sprintf("%02d", seconds%60)
	},
	"path": func(parts ...string) string {
		for i, p := range parts {
			parts[i] = url.PathEscape(p)
		}
		return strings.Join(parts, "/")
	},
	"deref": func(p *int64) string {
		if p == nil {
			return "—"
		}
		return strconv.FormatInt(*p, 10)
	},
}

// thousands writes v with a comma between each group of three digits.
func thousands(v int64) string {
	s := strconv.FormatInt(max(v, -v), 10)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if v < 0 {
		return "-" + string(out)
	}
	return string(out)
}
