package admin

import (
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"
)

func (a *Admin) listPools(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	pools, err := a.Pools(r.Context(), app.ID)
	return map[string]any{"pools": pools}, err
}

func (a *Admin) getPool(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	pools, err := a.calling.Pools(r.Context(), app.ID, ps.ByName("pool"))
	if err != nil {
		return nil, err
	}
	if len(pools) == 0 {
		return nil, domain.NotFound("Hotline pool")
	}
	return pools[0], nil
}

type poolBody struct {
	Key     string   `json:"key"`
	Trunk   string   `json:"trunk"`
	Numbers []string `json:"numbers"`
}

func (a *Admin) createPool(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	var b poolBody
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	if strings.TrimSpace(b.Key) == "" {
		return nil, domain.Invalid("key", "is required")
	}
	if b.Trunk != "" && a.trunks != nil && !a.trunks[b.Trunk] {
		return nil, domain.Invalid("trunk", "must name one of sip.trunks (or be left out: the first)")
	}
	numbers, ok := cleanNumbers(b.Numbers)
	if !ok {
		return nil, domain.Invalid("numbers", "must not hold an empty number")
	}
	if err := exists(a.calling.CreatePool(r.Context(), app.ID, b.Key, b.Trunk, numbers, a.now()), "Hotline pool %q already exists", b.Key); err != nil {
		return nil, err
	}
	ps = append(ps, httprouter.Param{Key: "pool", Value: b.Key})
	return a.getPool(r, app, ps)
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

func (a *Admin) addNumbers(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	var b struct {
		Numbers []string `json:"numbers"`
	}
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	numbers, ok := cleanNumbers(b.Numbers)
	if !ok || len(numbers) == 0 {
		return nil, domain.Invalid("numbers", "is required and must hold non-empty numbers")
	}
	if err := notFound(a.calling.AddHotlines(r.Context(), app.ID, ps.ByName("pool"), numbers), "Hotline pool"); err != nil {
		return nil, err
	}
	return a.getPool(r, app, ps)
}

func (a *Admin) removeNumber(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	if err := notFound(a.calling.RemoveHotline(r.Context(), app.ID, ps.ByName("pool"), ps.ByName("number")), "Hotline number"); err != nil {
		return nil, err
	}
	return a.getPool(r, app, ps)
}

func (a *Admin) setNumberEnabled(enabled bool) appHandler {
	return func(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
		if err := notFound(a.calling.SetHotlineEnabled(r.Context(), app.ID, ps.ByName("pool"), ps.ByName("number"), enabled), "Hotline number"); err != nil {
			return nil, err
		}
		a.wake(app.ID)
		return a.getPool(r, app, ps)
	}
}
