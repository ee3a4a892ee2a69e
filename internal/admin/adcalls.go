package admin

import (
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// The admin API's advertising settings of a tenant
// (docs/compliance.md#advertising-calls): read, and changed within the
// decree's bounds only.

func (a *Admin) getAdvertising(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	return a.apps.AdSettings(r.Context(), app.ID)
}

type adSettingsBody struct {
	MaxCallsPerNumberPerDay *int    `json:"max_calls_per_number_per_day"`
	Start                   *string `json:"start"`
	End                     *string `json:"end"`
	Timezone                *string `json:"timezone"` // accepted only as it is
}

func (a *Admin) updateAdvertising(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	var b adSettingsBody
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	if b.Timezone != nil && *b.Timezone != domain.AdTimezone {
		return nil, domain.Invalid("timezone", "is always "+domain.AdTimezone+", the time the decree's hours are in")
	}
	s, err := a.apps.AdSettings(r.Context(), app.ID)
	if err != nil {
		return nil, err
	}
	setIf(&s.MaxCallsPerNumberPerDay, b.MaxCallsPerNumberPerDay)
	setIf(&s.Start, b.Start)
	setIf(&s.End, b.End)
	if fe := s.Check(); fe != nil {
		return nil, domain.ValidationError(*fe)
	}
	if err := a.apps.SetAdSettings(r.Context(), app.ID, s, a.now()); err != nil {
		return nil, err
	}
	a.wake(app.ID)
	return s, nil
}
