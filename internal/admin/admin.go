package admin

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/proxy"
	"dialbox/internal/recordings"
	"dialbox/internal/sandbox"
	"dialbox/internal/sandboxclock"
	"dialbox/internal/tokenlimit"

	"github.com/julienschmidt/httprouter"
)

// Admin serves /admin/v1: run-time management of every tenant, and the QA
// sandbox (journal, faults, sink, reset, clock). It has its own bearer
// token; application tokens are never accepted here.
//
// This file holds the type, its routes and its auth; the handlers are in
// one file per resource (apps.go, wallet.go, pools.go, scenarios.go,
// campaigns.go, webhooks.go, contacts.go, results.go, sandbox.go, dnc.go, adcalls.go);
// the services its handlers share with the console are in services.go,
// what it asks of the store in store.go.
type Admin struct {
	apps      AppStore
	calling   CallingStore
	contacts  ContactStore
	webhooks  WebhookStore
	dnc       DNCStore
	audit     AuditStore
	region    string           // phone.default_region, to read the phone filter
	now       func() time.Time // the real time: stamps records, schedules deliveries, times wrong tokens
	log       *slog.Logger
	tokenHash [sha256.Size]byte
	// wrongTokens limits guesses of the token here and at the console's
	// sign-in, by the client's address as proxies tells it.
	wrongTokens *tokenlimit.Limiter
	proxies     proxy.Trusted
	journal     *sandbox.Journal
	faults      *sandbox.Faults
	sink        *sandbox.Sink
	// clock is the simulator's; nil with real calls, whose time is fixed.
	clock Clock
	// sandboxNow is the time the rules of calling read (a contact's wait);
	// nil with real calls. now stays the real time: it stamps records and
	// schedules deliveries.
	sandboxNow *sandboxclock.Clock
	// trunks are the names a pool may give as its trunk; nil: any (the
	// simulated dialer has no trunks).
	trunks map[string]bool
	// recordings are the calls' recordings, recordingBase what their
	// recording_url starts with.
	recordings    recordings.Files
	recordingBase string
	// http.read_timeout and http.write_timeout, which a list upload's
	// deadlines follow (uploadBody).
	readTimeout, writeTimeout time.Duration

	// speech and chat: this dialbox's calls can hear speech, and have a
	// language model for agent steps (script.Unmet).
	speech, chat bool

	// reset wipes and re-applies the tenants with calling stopped; wake
	// tells the engine, wakeWebhooks the deliverer, of work.
	reset        func(ctx context.Context) error
	wake         func(appID int64)
	wakeWebhooks func()
}

// Parts are what the admin API is built from; the fields are
// Admin's, told there.
type Parts struct {
	Apps     AppStore
	Calling  CallingStore
	Contacts ContactStore
	Webhooks WebhookStore
	DNC      DNCStore
	Audit    AuditStore

	Region      string
	Now         func() time.Time
	Log         *slog.Logger
	TokenHash   [sha256.Size]byte
	WrongTokens *tokenlimit.Limiter
	Proxies     proxy.Trusted

	Journal    *sandbox.Journal
	Faults     *sandbox.Faults
	Sink       *sandbox.Sink
	Clock      Clock
	SandboxNow *sandboxclock.Clock

	Trunks                    map[string]bool
	Recordings                recordings.Files
	RecordingBase             string
	ReadTimeout, WriteTimeout time.Duration
	Speech, Chat              bool

	Reset        func(ctx context.Context) error
	Wake         func(appID int64)
	WakeWebhooks func()
}

// New builds the admin API whole from its parts.
func New(p Parts) *Admin {
	return &Admin{apps: p.Apps, calling: p.Calling, contacts: p.Contacts, webhooks: p.Webhooks, dnc: p.DNC, audit: p.Audit,
		region: p.Region, now: p.Now, log: p.Log, tokenHash: p.TokenHash, wrongTokens: p.WrongTokens, proxies: p.Proxies,
		journal: p.Journal, faults: p.Faults, sink: p.Sink, clock: p.Clock, sandboxNow: p.SandboxNow,
		trunks: p.Trunks, recordings: p.Recordings, recordingBase: p.RecordingBase,
		readTimeout: p.ReadTimeout, writeTimeout: p.WriteTimeout, speech: p.Speech, chat: p.Chat,
		reset: p.Reset, wake: p.Wake, wakeWebhooks: p.WakeWebhooks}
}

// Clock is the simulator's time scale, changeable at run time.
type Clock interface {
	TimeScale() float64
	SetTimeScale(float64)
}

// The admin token's settings. A token dialbox generated is kept as it is
// (TokenPlainSetting) beside its hash, as the applications' secrets
// are: the first-run block prints a sink command that works on every
// start, and whoever can read the database reads every tenant's secret
// already. A token the operator set is neither stored nor printed (see
// Main.sinkCommand). Databases of older dialboxes hold only the hash.
const (
	TokenSetting      = "admin_token_sha256"
	TokenPlainSetting = "admin_token"
)

// TokenHash returns the hash the admin API checks bearer tokens
// against: the configured token's, else the stored one's. On the first start
// without a configured token it generates one, stores it with its hash, and
// returns it to be announced. A configured token removes a generated one:
// it opens nothing any more, and would stay readable in the database and
// its backups (docs/admin.md#token).
func TokenHash(ctx context.Context, store TokenStore, configured string) ([sha256.Size]byte, string, error) {
	if configured != "" {
		return sha256.Sum256([]byte(configured)), "", forgetGeneratedAdminToken(ctx, store)
	}
	stored, err := store.AdminSetting(ctx, TokenSetting)
	if err != nil {
		return [sha256.Size]byte{}, "", err
	}
	var h [sha256.Size]byte
	if b, err := hex.DecodeString(stored); err == nil && len(b) == sha256.Size {
		copy(h[:], b)
		return h, "", nil
	}
	token := "dbx_admin_" + domain.RandomHex(20)
	h = sha256.Sum256([]byte(token))
	if err := store.SetAdminSetting(ctx, TokenPlainSetting, token); err != nil {
		return h, "", err
	}
	if err := store.SetAdminSetting(ctx, TokenSetting, hex.EncodeToString(h[:])); err != nil {
		return h, "", err
	}
	return h, token, nil
}

// forgetGeneratedAdminToken removes a generated admin token and its hash,
// when the database holds one: a write at every start would be a
// configuration change every node of a cluster hears about.
func forgetGeneratedAdminToken(ctx context.Context, store TokenStore) error {
	for _, key := range []string{TokenSetting, TokenPlainSetting} {
		v, err := store.AdminSetting(ctx, key)
		if err != nil {
			return err
		}
		if v != "" {
			return store.DeleteAdminSettings(ctx, TokenSetting, TokenPlainSetting)
		}
	}
	return nil
}

// Routes adds the admin API to r.
func (a *Admin) Routes(r *httprouter.Router) {
	const p = "/admin/v1"
	const app = p + "/apps/:app"
	r.POST(p+"/reset", a.handle(a.resetState))
	r.GET(p+"/clock", a.handle(a.getClock))
	r.PUT(p+"/clock", a.handle(a.setClock))

	a.dncRoutes(r, p+"/dnc")
	a.dncRoutes(r, app+"/dnc")

	r.GET(p+"/apps", a.handle(a.listApps))
	r.POST(p+"/apps", a.handle(a.createApp))
	r.GET(app, a.handleApp(a.getApp))
	r.PATCH(app, a.handle(a.updateApp))
	r.DELETE(app, a.handle(a.deleteApp))
	r.POST(app+"/disable", a.handle(a.setAppDisabled(true)))
	r.POST(app+"/enable", a.handle(a.setAppDisabled(false)))
	r.POST(app+"/token", a.handleApp(a.mintToken))

	r.GET(app+"/wallet", a.handleApp(a.getWallet))
	r.PATCH(app+"/wallet", a.handleApp(a.updateWallet))
	r.POST(app+"/wallet/topup", a.handleApp(a.topUp))

	r.GET(app+"/advertising", a.handleApp(a.getAdvertising))
	r.PATCH(app+"/advertising", a.handleApp(a.updateAdvertising))

	r.GET(app+"/pools", a.handleApp(a.listPools))
	r.POST(app+"/pools", a.handleApp(a.createPool))
	r.GET(app+"/pools/:pool", a.handleApp(a.getPool))
	r.DELETE(app+"/pools/:pool", a.handleApp(a.deleteOf("pool", "Hotline pool", a.calling.DeletePool)))
	r.POST(app+"/pools/:pool/numbers", a.handleApp(a.addNumbers))
	r.DELETE(app+"/pools/:pool/numbers/:number", a.handleApp(a.removeNumber))
	r.POST(app+"/pools/:pool/numbers/:number/enable", a.handleApp(a.setNumberEnabled(true)))
	r.POST(app+"/pools/:pool/numbers/:number/disable", a.handleApp(a.setNumberEnabled(false)))

	r.GET(app+"/scenarios", a.handleApp(a.listScenarios))
	r.POST(app+"/scenarios", a.handleApp(a.createScenario))
	r.GET(app+"/scenarios/:scenario", a.handleApp(a.getScenario))
	r.GET(app+"/scenarios/:scenario/results.csv", a.handleApp(a.scenarioResults))
	r.PATCH(app+"/scenarios/:scenario", a.handleApp(a.updateScenario))
	r.DELETE(app+"/scenarios/:scenario", a.handleApp(a.deleteOf("scenario", "Scenario", a.calling.DeleteScenario)))
	for _, t := range Transitions {
		r.POST(app+"/scenarios/:scenario/"+t.Name, a.handleApp(a.transition(t)))
	}

	r.GET(app+"/campaigns", a.handleApp(a.listCampaigns))
	r.POST(app+"/campaigns", a.handleApp(a.createCampaign))
	r.GET(app+"/campaigns/:campaign", a.handleApp(a.getCampaign))
	r.GET(app+"/campaigns/:campaign/results.csv", a.handleApp(a.campaignResults))
	r.POST(app+"/campaigns/:campaign/pause", a.handleApp(a.setCampaignPaused(true)))
	r.POST(app+"/campaigns/:campaign/resume", a.handleApp(a.setCampaignPaused(false)))
	r.POST(app+"/campaigns/:campaign/stop", a.handleApp(a.stopCampaign))

	r.GET(app+"/webhooks", a.handleApp(a.listEndpoints))
	r.POST(app+"/webhooks", a.handleApp(a.createEndpoint))
	r.GET(app+"/webhooks/:endpoint", a.handleApp(a.getEndpoint))
	r.PATCH(app+"/webhooks/:endpoint", a.handle(a.updateEndpoint))
	r.DELETE(app+"/webhooks/:endpoint", a.handleApp(a.deleteOf("endpoint", "Webhook endpoint", a.webhooks.DeleteEndpoint)))
	r.POST(app+"/webhooks/:endpoint/rotate-secret", a.handleApp(a.rotateSecret))
	r.POST(app+"/webhooks/:endpoint/recover", a.handleApp(a.recoverFailed))

	r.GET(app+"/contacts", a.handleApp(a.listContacts))
	r.GET(app+"/contacts/:contact", a.handleApp(a.getContact))
	r.GET(app+"/contacts/:contact/calls/:call/recording", a.handle(a.getRecording))
	r.GET(app+"/imports", a.handleApp(a.listImports))
	r.GET(app+"/imports/:import", a.handleApp(a.getImport))

	r.GET(app+"/webhook-messages", a.handleApp(a.listMessages))
	r.GET(app+"/webhook-messages/:message", a.handleApp(a.getMessage))
	r.POST(app+"/webhook-messages/:message/redeliver", a.handleApp(a.redeliver))

	r.GET(p+"/journal", a.handle(a.listJournal))
	r.GET(p+"/journal/count", a.handle(a.countJournal))
	r.DELETE(p+"/journal", a.handle(a.clearJournal))

	r.GET(p+"/faults", a.handle(a.listFaults))
	r.POST(p+"/faults", a.handle(a.addFault))
	r.DELETE(p+"/faults", a.handle(a.clearFaults))
	r.DELETE(p+"/faults/:fault", a.handle(a.removeFault))

	r.GET(p+"/sink", a.handle(a.listSink))
	r.DELETE(p+"/sink", a.handle(a.clearSink))
}

// handle serves h to a request bearing the admin token; an error, or a
// panic, is answered with the admin API's body for it.
func (a *Admin) handle(h httpx.Handler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler { // a download cut short: the connection is to be cut
					panic(v)
				}
				a.log.Error("panic serving admin request", "path", r.URL.Path, "panic", v)
				httpx.WriteAdminError(w, httpx.ErrAdminInternal)
			}
		}()
		if !a.Authorize(w, r) {
			return
		}
		result, err := h(r, ps)
		if d, ok := result.(*httpx.Download); ok && err == nil {
			d.Serve(w, r, a.log)
			return
		}
		if f, ok := result.(*httpx.ServedFile); ok && err == nil {
			// A file is the answer itself; one that cannot be opened is
			// answered as any error.
			if err = f.Serve(w); err == nil {
				return
			}
		} else if err == nil {
			httpx.WriteSuccess(w, result)
			return
		}
		body, known := httpx.AdminError(err)
		if !known {
			a.log.Error("admin request failed", "path", r.URL.Path, "err", err)
		}
		httpx.WriteAdminError(w, body)
	}
}

// Authorize says whether r bears the admin token, under the limit of wrong
// tokens; when it does not, the refusal is already answered.
func (a *Admin) Authorize(w http.ResponseWriter, r *http.Request) bool {
	token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !bearer {
		token = ""
	}
	right, retryAfter := a.CheckToken(r, token, a.now())
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(httpx.RetryAfterSeconds(retryAfter)))
		httpx.WriteAdminError(w, errWrongTokens)
		return false
	}
	if !right {
		httpx.WriteAdminError(w, httpx.ErrUnauthorized)
		return false
	}
	return true
}

// errWrongTokens answers a token refused unchecked by the limit on wrong
// tokens (docs/admin.md#wrong-tokens).
var errWrongTokens = &httpx.Error{Code: 429, Message: "Too many wrong tokens"}

// CheckToken says whether token, presented by r's client to the admin API
// or the console's sign-in, is the admin token, under the limit of wrong
// tokens: the right one is checked first, and only refused (retryAfter >
// 0, as a wrong one would be) within the limit's short back-off. No token
// guesses nothing and costs nothing.
func (a *Admin) CheckToken(r *http.Request, token string, now time.Time) (right bool, retryAfter time.Duration) {
	token = strings.TrimSpace(token)
	if token == "" {
		return false, 0
	}
	h := sha256.Sum256([]byte(token))
	right = subtle.ConstantTimeCompare(h[:], a.tokenHash[:]) == 1
	if retryAfter = a.wrongTokens.Check(a.proxies.ClientAddr(r), right, now); retryAfter > 0 {
		return false, retryAfter
	}
	return right, 0
}

// app resolves the :app path parameter (an API key).
func (a *Admin) app(r *http.Request, ps httprouter.Params) (*domain.Application, error) {
	return a.App(r.Context(), ps.ByName("app"))
}

// appHandler serves a route of one tenant: app is the application the
// :app path parameter names.
type appHandler func(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error)

// handleApp serves h as handle does, with the application :app names
// resolved first: an unknown one is answered before h runs.
func (a *Admin) handleApp(h appHandler) httprouter.Handle {
	return a.handle(func(r *http.Request, ps httprouter.Params) (any, error) {
		app, err := a.app(r, ps)
		if err != nil {
			return nil, err
		}
		return h(r, app, ps)
	})
}

// deleteOf is the handler that deletes, with del, the application's record
// the path parameter param names, and answers its id; what names the
// record when there is none.
func (a *Admin) deleteOf(param, what string, del func(ctx context.Context, appID int64, id string) error) appHandler {
	return func(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
		err := del(r.Context(), app.ID, ps.ByName(param))
		return map[string]string{"deleted": ps.ByName(param)}, notFound(err, what)
	}
}
