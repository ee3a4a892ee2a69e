package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"
)

// Admin serves /admin/v1: run-time management of every tenant, and the QA
// sandbox (journal, faults, sink, reset, clock). It has its own bearer
// token; application tokens are never accepted here.
type Admin struct {
	store     *Store
	region    string // phone.default_region, to read the phone filter
	now       func() time.Time
	log       *slog.Logger
	tokenHash [sha256.Size]byte
	journal   *Journal
	faults    *Faults
	sink      *Sink
	clock     Clock

	// Set by Main: reset wipes and re-applies the tenants with calling
	// stopped; wake tells the engine, wakeWebhooks the deliverer, of work.
	reset        func(ctx context.Context) error
	wake         func(appID int64)
	wakeWebhooks func()
}

// Clock is the simulator's time scale, changeable at run time.
type Clock interface {
	TimeScale() float64
	SetTimeScale(float64)
}

const adminTokenSetting = "admin_token_sha256"

// adminTokenHash returns the hash the admin API checks bearer tokens
// against: the configured token's, else the stored one's. On the first start
// without a configured token it generates one and returns it, to be printed
// once (only its hash is kept).
func adminTokenHash(ctx context.Context, store *Store, configured string) ([sha256.Size]byte, string, error) {
	if configured != "" {
		return sha256.Sum256([]byte(configured)), "", nil
	}
	stored, err := store.AdminSetting(ctx, adminTokenSetting)
	if err != nil {
		return [sha256.Size]byte{}, "", err
	}
	var h [sha256.Size]byte
	if b, err := hex.DecodeString(stored); err == nil && len(b) == sha256.Size {
		copy(h[:], b)
		return h, "", nil
	}
	token := "dbx_admin_" + randomHex(20)
	h = sha256.Sum256([]byte(token))
	if err := store.SetAdminSetting(ctx, adminTokenSetting, hex.EncodeToString(h[:])); err != nil {
		return h, "", err
	}
	return h, token, nil
}

func (a *Admin) routes(r *httprouter.Router) {
	const p = "/admin/v1"
	const app = p + "/apps/:app"
	r.POST(p+"/reset", a.handle(a.resetState))
	r.GET(p+"/clock", a.handle(a.getClock))
	r.PUT(p+"/clock", a.handle(a.setClock))

	r.GET(p+"/apps", a.handle(a.listApps))
	r.POST(p+"/apps", a.handle(a.createApp))
	r.GET(app, a.handle(a.getApp))
	r.PATCH(app, a.handle(a.updateApp))
	r.DELETE(app, a.handle(a.deleteApp))
	r.POST(app+"/disable", a.handle(a.setAppDisabled(true)))
	r.POST(app+"/enable", a.handle(a.setAppDisabled(false)))
	r.POST(app+"/token", a.handle(a.mintToken))

	r.GET(app+"/wallet", a.handle(a.getWallet))
	r.PATCH(app+"/wallet", a.handle(a.updateWallet))
	r.POST(app+"/wallet/topup", a.handle(a.topUp))

	r.GET(app+"/pools", a.handle(a.listPools))
	r.POST(app+"/pools", a.handle(a.createPool))
	r.GET(app+"/pools/:pool", a.handle(a.getPool))
	r.DELETE(app+"/pools/:pool", a.handle(a.deletePool))
	r.POST(app+"/pools/:pool/numbers", a.handle(a.addNumbers))
	r.DELETE(app+"/pools/:pool/numbers/:number", a.handle(a.removeNumber))
	r.POST(app+"/pools/:pool/numbers/:number/enable", a.handle(a.setNumberEnabled(true)))
	r.POST(app+"/pools/:pool/numbers/:number/disable", a.handle(a.setNumberEnabled(false)))

	r.GET(app+"/scenarios", a.handle(a.listScenarios))
	r.POST(app+"/scenarios", a.handle(a.createScenario))
	r.GET(app+"/scenarios/:scenario", a.handle(a.getScenario))
	r.PATCH(app+"/scenarios/:scenario", a.handle(a.updateScenario))
	r.DELETE(app+"/scenarios/:scenario", a.handle(a.deleteScenario))
	for _, t := range scenarioTransitions {
		r.POST(app+"/scenarios/:scenario/"+t.name, a.handle(a.transition(t)))
	}

	r.GET(app+"/campaigns", a.handle(a.listCampaigns))
	r.POST(app+"/campaigns", a.handle(a.createCampaign))
	r.GET(app+"/campaigns/:campaign", a.handle(a.getCampaign))
	r.POST(app+"/campaigns/:campaign/pause", a.handle(a.setCampaignPaused(true)))
	r.POST(app+"/campaigns/:campaign/resume", a.handle(a.setCampaignPaused(false)))

	r.GET(app+"/webhooks", a.handle(a.listEndpoints))
	r.POST(app+"/webhooks", a.handle(a.createEndpoint))
	r.GET(app+"/webhooks/:endpoint", a.handle(a.getEndpoint))
	r.PATCH(app+"/webhooks/:endpoint", a.handle(a.updateEndpoint))
	r.DELETE(app+"/webhooks/:endpoint", a.handle(a.deleteEndpoint))
	r.POST(app+"/webhooks/:endpoint/rotate-secret", a.handle(a.rotateSecret))
	r.POST(app+"/webhooks/:endpoint/recover", a.handle(a.recoverFailed))

	r.GET(app+"/contacts", a.handle(a.listContacts))
	r.GET(app+"/contacts/:contact", a.handle(a.getContact))
	r.GET(app+"/imports", a.handle(a.listImports))
	r.GET(app+"/imports/:import", a.handle(a.getImport))

	r.GET(app+"/webhook-messages", a.handle(a.listMessages))
	r.GET(app+"/webhook-messages/:message", a.handle(a.getMessage))
	r.POST(app+"/webhook-messages/:message/redeliver", a.handle(a.redeliver))

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

// adminHandler returns the result to answer, or an error: an *APIError is
// answered as it is, anything else is logged and answered 500.
type adminHandler func(r *http.Request, ps httprouter.Params) (any, error)

func (a *Admin) handle(h adminHandler) httprouter.Handle {
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		defer func() {
			if v := recover(); v != nil {
				a.log.Error("panic serving admin request", "path", r.URL.Path, "panic", v)
				writeAdminError(w, errAdminInternal)
			}
		}()
		if !a.authorized(r) {
			writeAdminError(w, errUnauthorized)
			return
		}
		result, err := h(r, ps)
		var apiErr *APIError
		switch {
		case errors.As(err, &apiErr):
			writeAdminError(w, apiErr)
		case err != nil:
			a.log.Error("admin request failed", "path", r.URL.Path, "err", err)
			writeAdminError(w, errAdminInternal)
		default:
			writeSuccess(w, result)
		}
	}
}

func (a *Admin) authorized(r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(h[:], a.tokenHash[:]) == 1
}

// Admin errors: the public envelope, with the HTTP status equal to the code.
var (
	errAdminInternal    = &APIError{Code: 500, Message: "Internal error"}
	errAdminAppNotFound = &APIError{Code: 404, Message: "Application is not found"}
)

func adminError(code int, format string, args ...any) *APIError {
	return &APIError{Code: code, Message: fmt.Sprintf(format, args...)}
}

func notFound(what string) *APIError { return adminError(404, "%s is not found", what) }

func invalid(field, reason string) *APIError {
	return validationError(FieldError{Field: field, Reason: reason})
}

func writeAdminError(w http.ResponseWriter, e *APIError) {
	status := e.Code
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	writeJSON(w, status, errorBody{Code: e.Code, Message: e.Message, Details: e.Details})
}

// decode reads a JSON object body into v, refusing unknown fields; every
// problem is a 400 naming the field.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		switch {
		case errors.As(err, &typeErr) && typeErr.Field != "":
			return invalid(typeErr.Field, "must be "+jsonKind(typeErr.Type.String()))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return invalid(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "is not a known field")
		case errors.Is(err, io.EOF):
			return invalid("body", "must be a JSON object")
		}
		return invalid("body", "must be a JSON object: "+err.Error())
	}
	return nil
}

func jsonKind(goType string) string {
	switch strings.TrimPrefix(goType, "*") {
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int", "int64", "float64":
		return "a number"
	}
	if strings.HasPrefix(goType, "[]") {
		return "an array"
	}
	return "of type " + goType
}

// app resolves the :app path parameter (an API key).
func (a *Admin) app(r *http.Request, ps httprouter.Params) (*Application, error) {
	app, err := a.store.AppByKey(r.Context(), ps.ByName("app"))
	if errors.Is(err, errNotFound) {
		return nil, errAdminAppNotFound
	}
	return app, err
}

// ---- reset and clock ----

// resetState returns everything to the start: tenants as the fixtures (or
// the demo tenant) make them, no fault rules, an empty journal and sink.
func (a *Admin) resetState(r *http.Request, _ httprouter.Params) (any, error) {
	err := a.reset(r.Context())
	var bad *ConfigError
	if errors.As(err, &bad) {
		return nil, adminError(422, "Nothing was reset: %v", bad)
	}
	if err != nil {
		return nil, err
	}
	a.faults.Clear()
	a.journal.Clear()
	a.sink.Clear("")
	return a.listApps(r, nil)
}

type clockBody struct {
	TimeScale *float64 `json:"time_scale"`
}

func (a *Admin) getClock(*http.Request, httprouter.Params) (any, error) {
	return map[string]float64{"time_scale": a.clock.TimeScale()}, nil
}

func (a *Admin) setClock(r *http.Request, ps httprouter.Params) (any, error) {
	var b clockBody
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	if b.TimeScale == nil || *b.TimeScale <= 0 {
		return nil, invalid("time_scale", "is required and must be a positive number")
	}
	a.clock.SetTimeScale(*b.TimeScale)
	return a.getClock(r, ps)
}

// ---- applications ----

func (a *Admin) listApps(r *http.Request, _ httprouter.Params) (any, error) {
	apps, err := a.store.ListApps(r.Context())
	return map[string]any{"applications": apps}, err
}

func (a *Admin) getApp(r *http.Request, ps httprouter.Params) (any, error) {
	return a.app(r, ps)
}

type appBody struct {
	Name      *string `json:"name"`
	APIKey    *string `json:"api_key"`
	APISecret *string `json:"api_secret"`
	Disabled  *bool   `json:"disabled"`
}

// createdApp is the only answer that shows an application's secret.
type createdApp struct {
	*Application
	APISecret   string `json:"api_secret"`
	AccessToken string `json:"access_token"`
}

func (a *Admin) createApp(r *http.Request, _ httprouter.Params) (any, error) {
	var b appBody
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	if b.Disabled != nil {
		return nil, invalid("disabled", "cannot be set on create")
	}
	key, secret := deref(b.APIKey, randomHex(16)), deref(b.APISecret, randomHex(24))
	switch {
	case strings.TrimSpace(key) == "" || strings.ContainsAny(key, "/?# "):
		return nil, invalid("api_key", "must be a non-empty string without spaces, /, ? or #")
	case secret == "":
		return nil, invalid("api_secret", "must not be empty")
	}
	app, err := a.store.CreateApp(r.Context(), deref(b.Name, key), key, secret, a.now())
	if errors.Is(err, errConflict) {
		return nil, adminError(409, "An application with api_key %q already exists", key)
	}
	if err != nil {
		return nil, err
	}
	token, err := MintToken(app, a.now())
	return createdApp{app, secret, token}, err
}

func deref(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

func (a *Admin) updateApp(r *http.Request, ps httprouter.Params) (any, error) {
	var b appBody
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	switch {
	case b.APIKey != nil:
		return nil, invalid("api_key", "cannot be changed; create another application")
	case b.APISecret != nil && *b.APISecret == "":
		return nil, invalid("api_secret", "must not be empty")
	}
	return a.patchApp(r, ps, AppPatch{Name: b.Name, APISecret: b.APISecret, Disabled: b.Disabled})
}

func (a *Admin) patchApp(r *http.Request, ps httprouter.Params, p AppPatch) (any, error) {
	app, err := a.store.UpdateApp(r.Context(), ps.ByName("app"), p, a.now())
	if errors.Is(err, errNotFound) {
		return nil, errAdminAppNotFound
	}
	return app, err
}

func (a *Admin) setAppDisabled(disabled bool) adminHandler {
	return func(r *http.Request, ps httprouter.Params) (any, error) {
		return a.patchApp(r, ps, AppPatch{Disabled: &disabled})
	}
}

func (a *Admin) deleteApp(r *http.Request, ps httprouter.Params) (any, error) {
	err := a.store.DeleteApp(r.Context(), ps.ByName("app"))
	if errors.Is(err, errNotFound) {
		return nil, errAdminAppNotFound
	}
	return map[string]string{"deleted": ps.ByName("app")}, err
}

func (a *Admin) mintToken(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	token, err := MintToken(app, a.now())
	return map[string]string{"access_token": token}, err
}

// ---- wallets ----

func (a *Admin) getWallet(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	return a.store.Wallet(r.Context(), app.ID)
}

type walletBody struct {
	Prepaid        *bool           `json:"prepaid"`
	Balance        *int64          `json:"balance"`
	ExpiresAt      json.RawMessage `json:"expires_at"` // RFC 3339, or null for never
	PricePerCall   *int64          `json:"price_per_call"`
	PricePerMinute *int64          `json:"price_per_minute"`
}

func (a *Admin) updateWallet(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	var b walletBody
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	for name, v := range map[string]*int64{"balance": b.Balance, "price_per_call": b.PricePerCall, "price_per_minute": b.PricePerMinute} {
		if v != nil && *v < 0 {
			return nil, invalid(name, "must not be negative")
		}
	}
	var expires *time.Time
	if len(b.ExpiresAt) > 0 {
		if expires, err = optionalTime(b.ExpiresAt); err != nil {
			return nil, invalid("expires_at", "must be an RFC 3339 time like \"2030-01-01T00:00:00Z\", or null")
		}
	}
	w, err := a.store.UpdateWallet(r.Context(), app.ID, func(w *Wallet) {
		setIf(&w.Prepaid, b.Prepaid)
		setIf(&w.Balance, b.Balance)
		setIf(&w.PricePerCall, b.PricePerCall)
		setIf(&w.PricePerMinute, b.PricePerMinute)
		if len(b.ExpiresAt) > 0 {
			w.ExpiresAt = expires
		}
	}, a.now())
	if err != nil {
		return nil, err
	}
	a.wake(app.ID)
	return w, nil
}

// setIf sets *dst to *v when v is given.
func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

func optionalTime(raw json.RawMessage) (*time.Time, error) {
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	if s == nil {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, *s)
	t = t.UTC()
	return &t, err
}

func (a *Admin) topUp(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	var b struct {
		Amount *int64 `json:"amount"`
	}
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	if b.Amount == nil || *b.Amount <= 0 {
		return nil, invalid("amount", "is required and must be a positive number of VND")
	}
	if err := a.store.TopUp(r.Context(), app.ID, *b.Amount, a.now()); err != nil {
		return nil, err
	}
	a.wake(app.ID)
	return a.store.Wallet(r.Context(), app.ID)
}

// ---- hotline pools ----

func (a *Admin) listPools(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	pools, err := a.store.Pools(r.Context(), app.ID, "")
	return map[string]any{"pools": pools}, err
}

func (a *Admin) getPool(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	pools, err := a.store.Pools(r.Context(), app.ID, ps.ByName("pool"))
	if err != nil {
		return nil, err
	}
	if len(pools) == 0 {
		return nil, notFound("Hotline pool")
	}
	return pools[0], nil
}

type poolBody struct {
	Key     string   `json:"key"`
	Numbers []string `json:"numbers"`
}

func (a *Admin) createPool(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	var b poolBody
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	if strings.TrimSpace(b.Key) == "" {
		return nil, invalid("key", "is required")
	}
	numbers, ok := cleanNumbers(b.Numbers)
	if !ok {
		return nil, invalid("numbers", "must not hold an empty number")
	}
	err = a.store.CreatePool(r.Context(), app.ID, b.Key, numbers, a.now())
	if errors.Is(err, errConflict) {
		return nil, adminError(409, "Hotline pool %q already exists", b.Key)
	}
	if err != nil {
		return nil, err
	}
	ps = append(ps, httprouter.Param{Key: "pool", Value: b.Key})
	return a.getPool(r, ps)
}

// cleanNumbers trims hotline numbers; false when one is empty.
func cleanNumbers(numbers []string) ([]string, bool) {
	out := make([]string, len(numbers))
	for i, n := range numbers {
		if out[i] = strings.TrimSpace(n); out[i] == "" {
			return nil, false
		}
	}
	return out, true
}

func (a *Admin) deletePool(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	err = a.store.DeletePool(r.Context(), app.ID, ps.ByName("pool"))
	if errors.Is(err, errNotFound) {
		return nil, notFound("Hotline pool")
	}
	return map[string]string{"deleted": ps.ByName("pool")}, err
}

func (a *Admin) addNumbers(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	var b struct {
		Numbers []string `json:"numbers"`
	}
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	numbers, ok := cleanNumbers(b.Numbers)
	if !ok || len(numbers) == 0 {
		return nil, invalid("numbers", "is required and must hold non-empty numbers")
	}
	err = a.store.AddHotlines(r.Context(), app.ID, ps.ByName("pool"), numbers)
	if errors.Is(err, errNotFound) {
		return nil, notFound("Hotline pool")
	}
	if err != nil {
		return nil, err
	}
	return a.getPool(r, ps)
}

func (a *Admin) removeNumber(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	err = a.store.RemoveHotline(r.Context(), app.ID, ps.ByName("pool"), ps.ByName("number"))
	if errors.Is(err, errNotFound) {
		return nil, notFound("Hotline number")
	}
	if err != nil {
		return nil, err
	}
	return a.getPool(r, ps)
}

func (a *Admin) setNumberEnabled(enabled bool) adminHandler {
	return func(r *http.Request, ps httprouter.Params) (any, error) {
		app, err := a.app(r, ps)
		if err != nil {
			return nil, err
		}
		err = a.store.SetHotlineEnabled(r.Context(), app.ID, ps.ByName("pool"), ps.ByName("number"), enabled)
		if errors.Is(err, errNotFound) {
			return nil, notFound("Hotline number")
		}
		if err != nil {
			return nil, err
		}
		a.wake(app.ID)
		return a.getPool(r, ps)
	}
}

// ---- scenarios ----

// adminScenario is a scenario as the admin API shows it: the public fields
// plus its content.
type adminScenario struct {
	ID                 string     `json:"id"`
	Name               string     `json:"name"`
	Description        string     `json:"description"`
	Status             string     `json:"status"`
	Content            string     `json:"content"`
	PersonalizedFields []string   `json:"personalized_fields"`
	CallConfig         CallConfig `json:"call_config"`
	CreatedAt          time.Time  `json:"created_at"`
	UpdatedAt          time.Time  `json:"updated_at"`
}

func showScenario(sc *Scenario) adminScenario {
	return adminScenario{sc.ID, sc.Name, sc.Description, sc.Status, sc.Content, sc.PersonalizedFields,
		sc.CallConfig, sc.CreatedAt, sc.UpdatedAt}
}

func (a *Admin) scenario(r *http.Request, appID int64, id string) (*Scenario, error) {
	sc, err := a.store.Scenario(r.Context(), appID, id)
	if errors.Is(err, errNotFound) {
		return nil, notFound("Scenario")
	}
	return sc, err
}

func (a *Admin) listScenarios(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	status := q.Get("status")
	if status != "" && !validScenarioStatus(status) {
		return nil, invalid("status", "must be DRAFT, ACTIVE, REVIEWING or REJECT")
	}
	limit, offset, err := pageParams(q)
	if err != nil {
		return nil, err
	}
	list, total, err := a.store.ListScenarios(r.Context(), app.ID, status, limit, offset)
	if err != nil {
		return nil, err
	}
	out := make([]adminScenario, len(list))
	for i, sc := range list {
		out[i] = showScenario(sc)
	}
	return map[string]any{"scenarios": out, "total_count": total}, nil
}

// pageParams reads limit (see limitParam) and offset (default 0).
func pageParams(q url.Values) (int, int, error) {
	limit, err := limitParam(q)
	if err != nil {
		return 0, 0, err
	}
	offset, ok := intParam(q.Get("offset"), 0, 0, 1<<31-1)
	if !ok {
		return 0, 0, invalid("offset", "must be an integer of 0 or more")
	}
	return limit, offset, nil
}

// limitParam reads limit, the page size of the admin API's paged lists
// (the journal has its own): 1 to 500, default 50.
func limitParam(q url.Values) (int, error) {
	limit, ok := intParam(q.Get("limit"), 50, 1, 500)
	if !ok {
		return 0, invalid("limit", "must be an integer from 1 to 500")
	}
	return limit, nil
}

type scenarioBody struct {
	ID                 *string         `json:"id"`
	Name               *string         `json:"name"`
	Description        *string         `json:"description"`
	Status             *string         `json:"status"`
	Content            *string         `json:"content"`
	PersonalizedFields []string        `json:"personalized_fields"`
	CallConfig         json.RawMessage `json:"call_config"` // merged over the current (or default) one
}

// apply sets the body's fields on sc and checks the result.
func (b *scenarioBody) apply(sc *Scenario) error {
	for _, f := range []struct {
		from *string
		to   *string
	}{{b.Name, &sc.Name}, {b.Description, &sc.Description}, {b.Content, &sc.Content}} {
		if f.from != nil {
			*f.to = *f.from
		}
	}
	if b.PersonalizedFields != nil {
		sc.PersonalizedFields = b.PersonalizedFields
	}
	if len(b.CallConfig) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b.CallConfig))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sc.CallConfig); err != nil {
			return invalid("call_config", "must be a call_config object: "+err.Error())
		}
	}
	if fe := validateScenarioFields(sc.ID, sc.Status, sc.PersonalizedFields, sc.CallConfig); fe != nil {
		return validationError(*fe)
	}
	return nil
}

func (a *Admin) createScenario(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	var b scenarioBody
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	sc := &Scenario{AppID: app.ID, ID: deref(b.ID, uuid.NewString()), Status: deref(b.Status, StatusDraft),
		PersonalizedFields: []string{}, CallConfig: DefaultCallConfig()}
	if err := b.apply(sc); err != nil {
		return nil, err
	}
	err = a.store.CreateScenario(r.Context(), sc, a.now())
	if errors.Is(err, errConflict) {
		return nil, adminError(409, "Scenario %q already exists", sc.ID)
	}
	if err != nil {
		return nil, err
	}
	return a.showScenario(r, app.ID, sc.ID)
}

func (a *Admin) showScenario(r *http.Request, appID int64, id string) (any, error) {
	sc, err := a.scenario(r, appID, id)
	if err != nil {
		return nil, err
	}
	return showScenario(sc), nil
}

func (a *Admin) getScenario(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	return a.showScenario(r, app.ID, ps.ByName("scenario"))
}

func (a *Admin) updateScenario(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	var b scenarioBody
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	switch {
	case b.ID != nil:
		return nil, invalid("id", "cannot be changed")
	case b.Status != nil:
		return nil, invalid("status", "changes only through submit, approve, reject and edit")
	}
	sc, err := a.scenario(r, app.ID, ps.ByName("scenario"))
	if err != nil {
		return nil, err
	}
	if err := b.apply(sc); err != nil {
		return nil, err
	}
	err = a.store.UpdateScenario(r.Context(), sc, a.now())
	if errors.Is(err, errNotFound) {
		return nil, notFound("Scenario")
	}
	if err != nil {
		return nil, err
	}
	return a.showScenario(r, app.ID, sc.ID)
}

func (a *Admin) deleteScenario(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	err = a.store.DeleteScenario(r.Context(), app.ID, ps.ByName("scenario"))
	if errors.Is(err, errNotFound) {
		return nil, notFound("Scenario")
	}
	return map[string]string{"deleted": ps.ByName("scenario")}, err
}

// scenarioTransition is one arrow of DESIGN §5's status diagram.
type scenarioTransition struct {
	name string
	from []string
	to   string
}

var scenarioTransitions = []scenarioTransition{
	{"submit", []string{StatusDraft}, StatusReviewing},
	{"approve", []string{StatusReviewing}, StatusActive},
	{"reject", []string{StatusReviewing}, StatusReject},
	{"edit", []string{StatusActive, StatusReject}, StatusDraft},
}

func (a *Admin) transition(t scenarioTransition) adminHandler {
	return func(r *http.Request, ps httprouter.Params) (any, error) {
		app, err := a.app(r, ps)
		if err != nil {
			return nil, err
		}
		id := ps.ByName("scenario")
		err = a.store.TransitionScenario(r.Context(), app.ID, id, t.from, t.to, a.now())
		var bad errBadTransition
		switch {
		case errors.Is(err, errNotFound):
			return nil, notFound("Scenario")
		case errors.As(err, &bad):
			return nil, adminError(409, "Cannot %s a scenario in status %s (only from %s)", t.name, bad.status, strings.Join(t.from, " or "))
		case err != nil:
			return nil, err
		}
		a.wake(app.ID)
		return a.showScenario(r, app.ID, id)
	}
}

// ---- campaigns ----

func (a *Admin) listCampaigns(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	list, err := a.store.ListCampaigns(r.Context(), app.ID, r.URL.Query().Get("scenario_id"))
	return map[string]any{"campaigns": list}, err
}

func (a *Admin) getCampaign(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	c, err := a.store.Campaign(r.Context(), app.ID, ps.ByName("campaign"))
	if errors.Is(err, errNotFound) {
		return nil, notFound("Campaign")
	}
	return c, err
}

func (a *Admin) createCampaign(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	var b struct {
		ID         *string `json:"id"`
		Name       string  `json:"name"`
		ScenarioID string  `json:"scenario_id"`
	}
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	c := &Campaign{AppID: app.ID, ID: deref(b.ID, uuid.NewString()), Name: b.Name, ScenarioID: b.ScenarioID}
	switch {
	case c.ID == "":
		return nil, invalid("id", "must not be empty")
	case c.ScenarioID == "":
		return nil, invalid("scenario_id", "is required")
	}
	if _, err := a.scenario(r, app.ID, c.ScenarioID); err != nil {
		if isNotFound(err) {
			return nil, invalid("scenario_id", fmt.Sprintf("%q is not a scenario of this application", c.ScenarioID))
		}
		return nil, err
	}
	err = a.store.CreateCampaign(r.Context(), c, a.now())
	if errors.Is(err, errConflict) {
		return nil, adminError(409, "Campaign %q already exists", c.ID)
	}
	if err != nil {
		return nil, err
	}
	ps = append(ps, httprouter.Param{Key: "campaign", Value: c.ID})
	return a.getCampaign(r, ps)
}

func isNotFound(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.Code == 404
}

func (a *Admin) setCampaignPaused(paused bool) adminHandler {
	return func(r *http.Request, ps httprouter.Params) (any, error) {
		app, err := a.app(r, ps)
		if err != nil {
			return nil, err
		}
		err = a.store.SetCampaignPaused(r.Context(), app.ID, ps.ByName("campaign"), paused, a.now())
		if errors.Is(err, errNotFound) {
			return nil, notFound("Campaign")
		}
		if err != nil {
			return nil, err
		}
		a.wake(app.ID)
		return a.getCampaign(r, ps)
	}
}

// ---- webhook endpoints ----

func (a *Admin) listEndpoints(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	list, err := a.store.Endpoints(r.Context(), app.ID)
	for _, e := range list {
		e.Secret = ""
	}
	return map[string]any{"webhooks": list}, err
}

func (a *Admin) endpoint(r *http.Request, ps httprouter.Params) (*Application, *WebhookEndpoint, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, nil, err
	}
	e, err := a.store.Endpoint(r.Context(), app.ID, ps.ByName("endpoint"))
	if errors.Is(err, errNotFound) {
		return nil, nil, notFound("Webhook endpoint")
	}
	return app, e, err
}

func (a *Admin) getEndpoint(r *http.Request, ps httprouter.Params) (any, error) {
	_, e, err := a.endpoint(r, ps)
	if err != nil {
		return nil, err
	}
	e.Secret = ""
	return e, nil
}

type endpointBody struct {
	URL     *string  `json:"url"`
	Secret  *string  `json:"secret"`
	Events  []string `json:"events"`
	Enabled *bool    `json:"enabled"`
}

// apply sets the body's fields on e and checks the result.
func (b *endpointBody) apply(e *WebhookEndpoint) error {
	if b.URL != nil {
		e.URL = *b.URL
	}
	if b.Secret != nil {
		e.Secret = *b.Secret
	}
	if b.Events != nil {
		e.Events = b.Events
	}
	if b.Enabled != nil {
		e.Enabled = *b.Enabled
	}
	if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid("url", "must be an http:// or https:// URL")
	}
	if err := checkWebhookSecret(e.Secret); err != nil {
		return invalid("secret", err.Error())
	}
	for _, ev := range e.Events {
		if ev != EventCallCompleted && ev != EventContactCompleted {
			return invalid("events", fmt.Sprintf("%q is not an event (call.completed, contact.completed)", ev))
		}
	}
	return nil
}

func newWebhookSecret() string {
	b := make([]byte, 24)
	rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

func (a *Admin) createEndpoint(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	var b endpointBody
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	e := &WebhookEndpoint{ID: uuid.NewString(), Secret: newWebhookSecret(), Events: []string{}, Enabled: true}
	if err := b.apply(e); err != nil {
		return nil, err
	}
	if err := a.store.SaveEndpoint(r.Context(), app.ID, e, a.now()); err != nil {
		return nil, err
	}
	return a.store.Endpoint(r.Context(), app.ID, e.ID)
}

func (a *Admin) updateEndpoint(r *http.Request, ps httprouter.Params) (any, error) {
	var b endpointBody
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	app, e, err := a.endpoint(r, ps)
	if err != nil {
		return nil, err
	}
	if err := b.apply(e); err != nil {
		return nil, err
	}
	if err := a.store.SaveEndpoint(r.Context(), app.ID, e, a.now()); err != nil {
		return nil, err
	}
	return a.getEndpoint(r, ps)
}

func (a *Admin) deleteEndpoint(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	err = a.store.DeleteEndpoint(r.Context(), app.ID, ps.ByName("endpoint"))
	if errors.Is(err, errNotFound) {
		return nil, notFound("Webhook endpoint")
	}
	return map[string]string{"deleted": ps.ByName("endpoint")}, err
}

func (a *Admin) rotateSecret(r *http.Request, ps httprouter.Params) (any, error) {
	app, e, err := a.endpoint(r, ps)
	if err != nil {
		return nil, err
	}
	e.Secret = newWebhookSecret()
	if err := a.store.SaveEndpoint(r.Context(), app.ID, e, a.now()); err != nil {
		return nil, err
	}
	return a.store.Endpoint(r.Context(), app.ID, e.ID)
}

func (a *Admin) recoverFailed(r *http.Request, ps httprouter.Params) (any, error) {
	app, e, err := a.endpoint(r, ps)
	if err != nil {
		return nil, err
	}
	var b struct {
		Since string `json:"since"`
	}
	if err := decode(r, &b); err != nil {
		return nil, err
	}
	since, err := time.Parse(time.RFC3339, b.Since)
	if err != nil {
		return nil, invalid("since", "is required and must be an RFC 3339 time like \"2026-01-01T00:00:00Z\"")
	}
	n, err := a.store.RecoverFailed(r.Context(), app.ID, e.ID, since, a.now())
	if err != nil {
		return nil, err
	}
	a.wakeWebhooks()
	return map[string]int64{"recovered": n}, nil
}

// ---- contacts and imports ----

// timeParam reads an optional RFC 3339 query parameter.
func timeParam(q url.Values, name string) (time.Time, error) {
	s := q.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return t, invalid(name, "must be an RFC 3339 time like \"2026-01-01T00:00:00Z\"")
	}
	return t, nil
}

// cursorPageParams reads from, to, limit and cursor (a next_cursor of an
// earlier page), and complains of the first bad one in that order.
func cursorPageParams(q url.Values) (CursorPage, error) {
	var p CursorPage
	var err error
	if p.From, err = timeParam(q, "from"); err != nil {
		return p, err
	}
	if p.To, err = timeParam(q, "to"); err != nil {
		return p, err
	}
	if p.Limit, err = limitParam(q); err != nil {
		return p, err
	}
	if c := q.Get("cursor"); c != "" {
		if p.Cursor, err = strconv.ParseInt(c, 10, 64); err != nil || p.Cursor <= 0 {
			return p, invalid("cursor", "must be the next_cursor of an earlier page")
		}
	}
	return p, nil
}

var contactStates = map[string]bool{"": true, ContactQueued: true, ContactDialing: true, ContactDone: true}

func (a *Admin) listContacts(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	f := ContactFilter{ScenarioID: q.Get("scenario_id"), CampaignID: q.Get("campaign_id"), State: q.Get("state"),
		Outcome: q.Get("outcome"), Phone: q.Get("phone")}
	if !contactStates[f.State] {
		return nil, invalid("state", "must be queued, dialing or done")
	}
	if f.Phone != "" {
		if f.Phone, err = normalizePhone(f.Phone, a.region); err != nil {
			return nil, invalid("phone", err.Error())
		}
	}
	if f.CursorPage, err = cursorPageParams(q); err != nil {
		return nil, err
	}
	list, next, err := a.store.Contacts(r.Context(), app.ID, f)
	return map[string]any{"contacts": list, "next_cursor": next}, err
}

func (a *Admin) getContact(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	c, calls, err := a.store.Contact(r.Context(), app.ID, ps.ByName("contact"))
	if errors.Is(err, errNotFound) {
		return nil, notFound("Contact")
	}
	return contactWithCalls{c, calls}, err
}

type contactWithCalls struct {
	*ContactRecord
	Calls []CallRecord `json:"calls"`
}

func (a *Admin) listImports(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	limit, err := limitParam(q)
	if err != nil {
		return nil, err
	}
	list, err := a.store.Imports(r.Context(), app.ID, q.Get("scenario_id"), limit)
	return map[string]any{"imports": list}, err
}

func (a *Admin) getImport(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	im, err := a.store.ImportByID(r.Context(), app.ID, ps.ByName("import"))
	if errors.Is(err, errNotFound) {
		return nil, notFound("Import")
	}
	if err != nil {
		return nil, err
	}
	skipped, err := a.store.SkippedOf(r.Context(), im.ID)
	if skipped == nil {
		skipped = []SkippedContact{}
	}
	return importWithSkipped{im, skipped}, err
}

type importWithSkipped struct {
	*ImportRecord
	SkippedContacts []SkippedContact `json:"skipped_contacts"`
}

// ---- webhook messages ----

var messageStates = map[string]bool{"": true, msgPending: true, msgDelivered: true, msgDead: true}

func (a *Admin) listMessages(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	f := MessageFilter{EndpointID: q.Get("endpoint_id"), State: q.Get("state"), EventType: q.Get("event_type")}
	if !messageStates[f.State] {
		return nil, invalid("state", "must be pending, delivered or dead")
	}
	if f.CursorPage, err = cursorPageParams(q); err != nil {
		return nil, err
	}
	list, next, err := a.store.Messages(r.Context(), app.ID, f)
	return map[string]any{"messages": list, "next_cursor": next}, err
}

func (a *Admin) getMessage(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	m, attempts, err := a.store.Message(r.Context(), app.ID, ps.ByName("message"))
	if errors.Is(err, errNotFound) {
		return nil, notFound("Webhook message")
	}
	return messageWithAttempts{m, attempts}, err
}

type messageWithAttempts struct {
	*WebhookMessage
	AttemptLog []WebhookAttempt `json:"attempt_log"`
}

func (a *Admin) redeliver(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	err = a.store.Redeliver(r.Context(), app.ID, ps.ByName("message"), a.now())
	if errors.Is(err, errNotFound) {
		return nil, notFound("Webhook message")
	}
	if err != nil {
		return nil, err
	}
	a.wakeWebhooks()
	return a.getMessage(r, ps)
}

// ---- wiring ----

// mountAdmin adds the admin API and the sink to router, and hooks the
// sandbox (journal, fault rules) into api, the engine and webhook delivery.
// It must run before calling starts (the hooks are read at Start).
func (m *Main) mountAdmin(ctx context.Context, router *httprouter.Router, api *API) error {
	hash, generated, err := adminTokenHash(ctx, m.store, m.Config.Admin.Token)
	if err != nil {
		return err
	}
	sink, err := NewSink(m.Config.Sink)
	if err != nil {
		return err
	}
	region := m.Config.Phone.DefaultRegion
	admin := &Admin{store: m.store, region: region, now: time.Now, log: m.Log, tokenHash: hash,
		journal: NewJournal(m.Config.Journal), faults: NewFaults(m.store), sink: sink, clock: m.dialer,
		reset: m.resetTenants, wake: m.engine.Notify, wakeWebhooks: m.webhooks.Notify}
	api.journal, api.faults = admin.journal, admin.faults
	m.engine.BeforeDial, m.webhooks.BeforeSend = admin.faults.BeforeDial, admin.faults.BeforeSend
	admin.routes(router)
	router.POST("/sink/:name", sink.receive)
	if generated != "" {
		fmt.Fprintf(m.Stdout, "\nAdmin API token (shown this once; only its hash is stored, set admin.token to choose one):\n  %s\n", generated)
	}
	return nil
}

// resetTenants stops calling, replaces every tenant by the fixtures (or the
// demo tenant) in one transaction, and starts calling again.
func (m *Main) resetTenants(ctx context.Context) error {
	m.stopCalling()
	ctx = context.WithoutCancel(ctx) // calling must restart even if the client goes away
	now := time.Now()
	apps := []*FixtureApp{m.demoTenant(ctx, now)}
	var err error
	if m.Config.Fixtures != "" {
		var ff *FixtureFile
		if ff, err = LoadFixtures(m.Config.Fixtures); err == nil {
			apps = ff.Applications
		}
	}
	if err == nil {
		err = m.store.Reset(ctx, apps, now)
	}
	return errors.Join(err, m.startCalling(ctx))
}

// demoTenant is the demo fixture with its webhook on this server's sink. It
// keeps the secret of an existing demo tenant, so tokens printed at start
// still work after a reset.
func (m *Main) demoTenant(ctx context.Context, now time.Time) *FixtureApp {
	fa := demoFixture(now)
	if old, err := m.store.DemoApp(ctx); err == nil {
		fa.APISecret = old.APISecret
	}
	fa.Webhooks = []FixtureWebhook{{URL: sinkURL(m.URL(), "demo"), Secret: m.Config.Sink.Secret}}
	return fa
}
