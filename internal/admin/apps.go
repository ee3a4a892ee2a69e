package admin

import (
	"net/http"

	"dialbox/internal/auth"
	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"

	"github.com/julienschmidt/httprouter"
)

func (a *Admin) listApps(r *http.Request, _ httprouter.Params) (any, error) {
	apps, err := a.ListApps(r.Context())
	return map[string]any{"applications": apps}, err
}

func (a *Admin) getApp(_ *http.Request, app *domain.Application, _ httprouter.Params) (any, error) {
	return app, nil
}

type appBody struct {
	Name      *string `json:"name"`
	APIKey    *string `json:"api_key"`
	APISecret *string `json:"api_secret"`
	Disabled  *bool   `json:"disabled"`
	// Destinations are the tenant's own allow and deny prefixes
	// (docs/admin.md#destination-rules); given, they replace both lists.
	Destinations *destinations.Rules `json:"destinations"`
}

// checkDestinations refuses a prefix that is not "+" and digits, or too
// many, naming the list.
func (b appBody) checkDestinations() error {
	if b.Destinations == nil {
		return nil
	}
	if fe := b.Destinations.Validate(); fe != nil {
		return domain.Invalid("destinations."+fe.Field, fe.Message)
	}
	return nil
}

// createdApp is the only answer that shows an application's secret.
type createdApp struct {
	*domain.Application
	APISecret   string `json:"api_secret"`
	AccessToken string `json:"access_token"`
}

func (a *Admin) createApp(r *http.Request, _ httprouter.Params) (any, error) {
	var b appBody
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	if b.Disabled != nil {
		return nil, domain.Invalid("disabled", "cannot be set on create")
	}
	key, secret := deref(b.APIKey, domain.RandomHex(16)), deref(b.APISecret, domain.RandomHex(24))
	if problem := domain.APIKeyProblem(key); problem != "" {
		return nil, domain.Invalid("api_key", problem)
	}
	if problem := domain.APISecretProblem(secret); problem != "" {
		return nil, domain.Invalid("api_secret", problem)
	}
	if err := b.checkDestinations(); err != nil {
		return nil, err
	}
	var rules destinations.Rules
	if b.Destinations != nil {
		rules = *b.Destinations
	}
	app, err := a.apps.CreateApp(r.Context(), deref(b.Name, key), key, secret, rules, a.now())
	if err = exists(err, "An application with api_key %q already exists", key); err != nil {
		return nil, err
	}
	token, err := auth.MintToken(app, a.now())
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
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	if b.APIKey != nil {
		return nil, domain.Invalid("api_key", "cannot be changed; create another application")
	}
	if b.APISecret != nil {
		if problem := domain.APISecretProblem(*b.APISecret); problem != "" {
			return nil, domain.Invalid("api_secret", problem)
		}
	}
	if err := b.checkDestinations(); err != nil {
		return nil, err
	}
	return a.patchApp(r, ps, domain.AppPatch{Name: b.Name, APISecret: b.APISecret, Disabled: b.Disabled, Destinations: b.Destinations})
}

func (a *Admin) patchApp(r *http.Request, ps httprouter.Params, p domain.AppPatch) (any, error) {
	app, err := a.apps.UpdateApp(r.Context(), ps.ByName("app"), p, a.now())
	return app, notFound(err, "Application")
}

func (a *Admin) setAppDisabled(disabled bool) httpx.Handler {
	return func(r *http.Request, ps httprouter.Params) (any, error) {
		return a.patchApp(r, ps, domain.AppPatch{Disabled: &disabled})
	}
}

func (a *Admin) deleteApp(r *http.Request, ps httprouter.Params) (any, error) {
	err := a.apps.DeleteApp(r.Context(), ps.ByName("app"))
	return map[string]string{"deleted": ps.ByName("app")}, notFound(err, "Application")
}

func (a *Admin) mintToken(_ *http.Request, app *domain.Application, _ httprouter.Params) (any, error) {
	token, err := auth.MintToken(app, a.now())
	return map[string]string{"access_token": token}, err
}
