package main

import (
	"bytes"
	"context"
	"dialbox/internal/auth"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/importer"
	"dialbox/internal/ops"
	"dialbox/internal/sandbox"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"
)

// API serves the public operations of the spec.
type API struct {
	cfg   config.Config
	store apiStore
	// now is the rules' time (a wallet's expiry, when contacts are due):
	// the sandbox clock's. Rate limits keep the real time.
	now      func() time.Time
	log      *slog.Logger
	importer *importer.Importer
	limits   *httpx.RateLimits
	tokens   *auth.Cache     // ACCESS_TOKENs already verified
	body     httpx.BodyRules // how operations A and C read their bodies
	// imports holds a token per import in progress (limits.max_concurrent_imports).
	imports chan struct{}

	// journal and faults are the admin API's sandbox (internal/admin/sandbox.go);
	// nil: off.
	journal *sandbox.Journal
	faults  *sandbox.Faults
}

// apiStore is the store as the public API reads it: through the
// configuration cache (internal/store/cache.go), which keeps its pages of scenarios too.
type apiStore interface {
	auth.Store
	Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error)
	Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error)
	ListScenarios(ctx context.Context, appID int64, status string, limit, offset int) ([]*domain.Scenario, int, error)
	Keep(key string, load func() (any, error)) (any, error)
}

func NewAPI(cfg config.Config, store apiStore, importer *importer.Importer, journal *sandbox.Journal, faults *sandbox.Faults, now func() time.Time, log *slog.Logger) *API {
	return &API{cfg: cfg, store: store, now: now, log: log, importer: importer,
		limits: httpx.NewRateLimits(cfg.Limits.RatePerSecond, cfg.Limits.Burst), tokens: &auth.Cache{},
		body:    httpx.BodyRules{Max: cfg.Limits.MaxBodyBytes, Whole: true, Numbers: true},
		imports: make(chan struct{}, cfg.Limits.MaxConcurrentImports),
		journal: journal, faults: faults}
}

func (a *API) routes(r *httprouter.Router) {
	r.POST("/api/v1/public-api/scenarios/:scenario_id/calls", a.handle(httpx.OpAddToScenario, a.addToScenario))
	r.GET("/api/v1/public-api/scenarios", a.handle(httpx.OpListScenarios, a.listScenarios))
	r.POST("/api/v1/public-api/campaign", a.handle(httpx.OpAddToCampaign, a.addToCampaign))
}

// apiHandler serves one public operation for the application its request
// authenticated as. The application is handed in, not put in the request's
// context: a new context is a copy of the request, two allocations each.
type apiHandler func(r *http.Request, ps httprouter.Params, app *domain.Application) (any, error)

// handle serves op with h for an authenticated application; an error, or
// a panic, is answered with the body of op's table.
func (a *API) handle(op httpx.Operation, h apiHandler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		// Deferred before the recover below, so a panic's answer is journaled too.
		w = a.journal.Begin(w, r, op.Name)
		defer a.journal.End(w)
		defer func() {
			if v := recover(); v != nil {
				a.log.Error("panic serving request", "op", op.Name, "path", r.URL.Path, "panic", v)
				a.writeError(w, op.Internal)
			}
		}()
		result, err := a.serve(w, r, ps, op, h)
		if err == nil {
			httpx.WriteSuccess(w, result)
			return
		}
		body, known := httpx.PublicError(op, err)
		if !known {
			a.log.Error("internal error", "op", op.Name, "path", r.URL.Path, "err", err)
		}
		a.writeError(w, body)
	}
}

// writeError writes a public error body with the HTTP status
// api.error_http_status asks for.
func (a *API) writeError(w http.ResponseWriter, e *httpx.Error) {
	status := http.StatusOK
	if a.cfg.API.ErrorHTTPStatus != config.StatusModeAlways {
		status = httpx.SemanticStatus(e.Code)
	}
	if e.Code == httpx.ErrRateLimited.Code && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", "1") // every 429 says when to come back
	}
	httpx.WriteJSON(w, status, httpx.ErrorBody{Code: e.Code, Message: e.Message, Details: e.Details})
}

// serve authenticates, applies the fault rules and the rate limit, then
// runs h.
func (a *API) serve(w http.ResponseWriter, r *http.Request, ps httprouter.Params, op httpx.Operation, h apiHandler) (any, error) {
	app, apiErr, err := a.tokens.Authenticate(r.Context(), a.store, r.Header.Get("Authorization"))
	ops.NoteRequest(w, op.Name, app)
	switch {
	case err != nil:
		return nil, err
	case apiErr != nil:
		return nil, apiErr
	}
	sandbox.JournalTenant(w, app)
	if apiErr := a.faults.Apply(w, r, ps, op, app); apiErr != nil {
		return nil, apiErr
	}
	if ok, wait := a.limits.Allow(app.ID, time.Now()); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(httpx.RetryAfterSeconds(wait)))
		return nil, httpx.ErrRateLimited
	}
	return h(r, ps, app)
}

// ---- operation A ----

func (a *API) addToScenario(r *http.Request, ps httprouter.Params, app *domain.Application) (any, error) {
	sc, err := a.store.Scenario(r.Context(), app.ID, ps.ByName("scenario_id"))
	if errors.Is(err, domain.ErrNotFound) {
		return nil, domain.NotFound("Scenario")
	}
	if err != nil {
		return nil, err
	}
	var body httpx.ContactsBody
	if err := httpx.DecodeJSON(r, &body, a.body); err != nil {
		return nil, err
	}
	if err := a.checkContacts(body.Contacts); err != nil {
		return nil, err
	}
	return a.importContacts(r.Context(), app, sc, "", body.Contacts)
}

// ---- operation C ----

type addToCampaignBody struct {
	CampaignID *string `json:"campaign_id"`
	// Contacts is judged only once the campaign is found (docs/design.md#operation-c-finds-the-campaign-first).
	Contacts json.RawMessage `json:"contacts"`
}

func (a *API) addToCampaign(r *http.Request, _ httprouter.Params, app *domain.Application) (any, error) {
	// The campaign id travels in the body, so the body is read first.
	var body addToCampaignBody
	if err := httpx.DecodeJSON(r, &body, a.body); err != nil {
		return nil, err
	}
	if body.CampaignID == nil || *body.CampaignID == "" {
		return nil, domain.Invalid("campaign_id", "is required and must be a string")
	}
	camp, err := a.store.Campaign(r.Context(), app.ID, *body.CampaignID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, domain.NotFound("Campaign")
	}
	if err != nil {
		return nil, err
	}
	var contacts []any
	if len(body.Contacts) > 0 {
		dec := json.NewDecoder(bytes.NewReader(body.Contacts))
		dec.UseNumber()
		if err := dec.Decode(&contacts); err != nil {
			return nil, domain.Invalid("contacts", "must be an array")
		}
	}
	if err := a.checkContacts(contacts); err != nil {
		return nil, err
	}
	sc, err := a.store.Scenario(r.Context(), app.ID, camp.ScenarioID)
	if err != nil {
		// A campaign's scenario always exists (foreign key): not finding it
		// is internal, not the public "not found".
		return nil, fmt.Errorf("scenario %q of campaign %q: %v", camp.ScenarioID, camp.ID, err)
	}
	return a.importContacts(r.Context(), app, sc, camp.ID, contacts)
}

// checkContacts checks the contacts array itself: present, not empty, not
// over the limit.
func (a *API) checkContacts(contacts []any) error {
	switch {
	case contacts == nil:
		return domain.Invalid("contacts", "is required and must be an array")
	case len(contacts) == 0:
		return domain.Invalid("contacts", "must hold at least one contact")
	case len(contacts) > a.cfg.Limits.MaxContactsPerRequest:
		return domain.ErrTooLarge
	}
	return nil
}

// importContacts hands the contacts to the importer, unless too many
// imports are in progress already.
func (a *API) importContacts(ctx context.Context, app *domain.Application, sc *domain.Scenario, campaignID string, items []any) (any, error) {
	select {
	case a.imports <- struct{}{}:
		defer func() { <-a.imports }()
	default:
		return nil, httpx.ErrOverloaded
	}
	res, err := a.importer.Import(ctx, app, sc, campaignID, items, a.now())
	if err != nil {
		return nil, err
	}
	return domain.AddedJSON(res.Added), nil
}

// ---- operation B ----

// scenarioFields are the fields of a scenario object, in the order written.
var scenarioFields = []string{"id", "name", "description", "status", "personalized_fields", "call_config", "created_at", "updated_at"}

func (a *API) listScenarios(r *http.Request, _ httprouter.Params, app *domain.Application) (any, error) {
	q := r.URL.Query()
	var bad []domain.FieldError
	status := q.Get("status")
	if status != "" && !domain.ValidScenarioStatus(status) {
		bad = append(bad, domain.FieldError{Field: "status", Reason: "must be DRAFT, ACTIVE, REVIEWING or REJECT"})
	}
	limit, ok := httpx.IntParam(q.Get("limit"), 10, 1, 50)
	if !ok {
		bad = append(bad, domain.FieldError{Field: "limit", Reason: "must be an integer from 1 to 50"})
	}
	offset, ok := httpx.IntParam(q.Get("offset"), 0, 0, 1<<31-1)
	if !ok {
		bad = append(bad, domain.FieldError{Field: "offset", Reason: "must be an integer of 0 or more"})
	}
	fields, unknown := selectFields(q.Get("fields"))
	if unknown != "" {
		bad = append(bad, domain.FieldError{Field: "fields", Reason: unknown + " is not a scenario field"})
	}
	if len(bad) > 0 {
		return nil, domain.ValidationError(bad...)
	}
	// The page is configuration only, so its JSON is kept in the
	// configuration cache until a configuration write.
	key := fmt.Sprintf("page\x00%d\x00%s\x00%d\x00%d\x00%s", app.ID, status, limit, offset, fieldsKey(fields))
	page, err := a.store.Keep(key, func() (any, error) {
		scenarios, total, err := a.store.ListScenarios(r.Context(), app.ID, status, limit, offset)
		if err != nil {
			return nil, err
		}
		out := make([]json.RawMessage, len(scenarios))
		for i, sc := range scenarios {
			if out[i], err = scenarioJSON(sc, fields); err != nil {
				return nil, err
			}
		}
		list, err := domain.MarshalJSON(scenarioList{Scenarios: out, TotalCount: total})
		return httpx.WrapSuccess(list), err
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// fieldsKey names a field selection the same way whatever order or
// repetition the fields parameter used.
func fieldsKey(sel map[string]bool) string {
	if sel == nil {
		return "*"
	}
	var b strings.Builder
	for _, f := range scenarioFields {
		if sel[f] {
			b.WriteString(f)
			b.WriteByte(',')
		}
	}
	return b.String()
}

type scenarioList struct {
	Scenarios  []json.RawMessage `json:"scenarios"`
	TotalCount int               `json:"total_count"`
}

// selectFields turns the fields parameter into the set of fields to write
// (id always among them); it returns the first unknown name, if any.
func selectFields(param string) (map[string]bool, string) {
	if strings.TrimSpace(param) == "" {
		return nil, "" // all fields
	}
	known := map[string]bool{}
	for _, f := range scenarioFields {
		known[f] = true
	}
	sel := map[string]bool{"id": true}
	for _, f := range strings.Split(param, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !known[f] {
			return nil, strconv.Quote(f)
		}
		sel[f] = true
	}
	return sel, ""
}

// scenarioJSON writes a scenario's selected fields (all when sel is nil) in
// the fixed order of scenarioFields.
func scenarioJSON(sc *domain.Scenario, sel map[string]bool) (json.RawMessage, error) {
	values := map[string]any{
		"id": sc.ID, "name": sc.Name, "description": sc.Description, "status": sc.Status,
		"personalized_fields": sc.PersonalizedFields, "call_config": sc.CallConfig,
		"created_at": sc.CreatedAt.Format(time.RFC3339), "updated_at": sc.UpdatedAt.Format(time.RFC3339),
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for _, f := range scenarioFields {
		if sel != nil && !sel[f] {
			continue
		}
		v, err := domain.MarshalJSON(values[f])
		if err != nil {
			return nil, err
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Quote(f))
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
