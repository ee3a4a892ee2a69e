package admin

import (
	"crypto/rand"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"encoding/base64"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"
)

// ---- webhook endpoints ----

func (a *Admin) listEndpoints(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	list, err := a.Endpoints(r.Context(), app.ID)
	for _, e := range list {
		e.Secret = ""
	}
	return map[string]any{"webhooks": list}, err
}

func (a *Admin) getEndpoint(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	e, err := a.Endpoint(r.Context(), app.ID, ps.ByName("endpoint"))
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
func (b *endpointBody) apply(e *domain.WebhookEndpoint) error {
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
	if err := domain.CheckWebhookURL(e.URL); err != nil {
		return domain.Invalid("url", err.Error())
	}
	if err := domain.CheckWebhookSecret(e.Secret); err != nil {
		return domain.Invalid("secret", err.Error())
	}
	for _, ev := range e.Events {
		if ev != domain.EventCallCompleted && ev != domain.EventContactCompleted {
			return domain.Invalid("events", fmt.Sprintf("%q is not an event (call.completed, contact.completed)", ev))
		}
	}
	return nil
}

func newWebhookSecret() string {
	b := make([]byte, 24)
	rand.Read(b)
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

func (a *Admin) createEndpoint(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	var b endpointBody
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	e := &domain.WebhookEndpoint{ID: uuid.NewString(), Secret: newWebhookSecret(), Events: []string{}, Enabled: true}
	if err := b.apply(e); err != nil {
		return nil, err
	}
	if err := a.webhooks.SaveEndpoint(r.Context(), app.ID, e, a.now()); err != nil {
		return nil, err
	}
	return a.webhooks.Endpoint(r.Context(), app.ID, e.ID)
}

// updateEndpoint is mounted by handle, not handleApp: its body is read
// before the application is resolved, so a bad body is what it answers
// first.
func (a *Admin) updateEndpoint(r *http.Request, ps httprouter.Params) (any, error) {
	var b endpointBody
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	e, err := a.Endpoint(r.Context(), app.ID, ps.ByName("endpoint"))
	if err != nil {
		return nil, err
	}
	if err := b.apply(e); err != nil {
		return nil, err
	}
	if err := a.webhooks.SaveEndpoint(r.Context(), app.ID, e, a.now()); err != nil {
		return nil, err
	}
	return a.getEndpoint(r, app, ps)
}

func (a *Admin) rotateSecret(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	e, err := a.Endpoint(r.Context(), app.ID, ps.ByName("endpoint"))
	if err != nil {
		return nil, err
	}
	e.Secret = newWebhookSecret()
	if err := a.webhooks.SaveEndpoint(r.Context(), app.ID, e, a.now()); err != nil {
		return nil, err
	}
	return a.webhooks.Endpoint(r.Context(), app.ID, e.ID)
}

func (a *Admin) recoverFailed(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	e, err := a.Endpoint(r.Context(), app.ID, ps.ByName("endpoint"))
	if err != nil {
		return nil, err
	}
	var b struct {
		Since string `json:"since"`
	}
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	since, err := time.Parse(time.RFC3339, b.Since)
	if err != nil {
		return nil, domain.Invalid("since", "is required and must be an RFC 3339 time like \"2026-01-01T00:00:00Z\"")
	}
	n, err := a.RecoverFailed(r.Context(), app.ID, e.ID, since)
	if err != nil {
		return nil, err
	}
	return map[string]int64{"recovered": n}, nil
}

// ---- webhook messages ----

func (a *Admin) listMessages(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	q := r.URL.Query()
	f := domain.MessageFilter{EndpointID: q.Get("endpoint_id"), State: q.Get("state"), EventType: q.Get("event_type")}
	if !domain.MessageStates[f.State] {
		return nil, domain.Invalid("state", "must be pending, delivered or dead")
	}
	var err error
	if f.CursorPage, err = httpx.CursorPageParams(q); err != nil {
		return nil, err
	}
	list, next, err := a.Messages(r.Context(), app.ID, f)
	return map[string]any{"messages": list, "next_cursor": next}, err
}

func (a *Admin) getMessage(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	m, attempts, err := a.Message(r.Context(), app.ID, ps.ByName("message"))
	return MessageWithAttempts{m, attempts}, err
}

type MessageWithAttempts struct {
	*domain.WebhookMessage
	AttemptLog []domain.WebhookAttempt `json:"attempt_log"`
}

func (a *Admin) redeliver(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	if err := a.Redeliver(r.Context(), app.ID, ps.ByName("message")); err != nil {
		return nil, err
	}
	return a.getMessage(r, app, ps)
}
