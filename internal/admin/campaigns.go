package admin

import (
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"net/http"

	"github.com/google/uuid"
	"github.com/julienschmidt/httprouter"
)

func (a *Admin) listCampaigns(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	list, err := a.ListCampaigns(r.Context(), app.ID, r.URL.Query().Get("scenario_id"))
	return map[string]any{"campaigns": list}, err
}

func (a *Admin) getCampaign(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	return a.Campaign(r.Context(), app.ID, ps.ByName("campaign"))
}

func (a *Admin) createCampaign(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	var b struct {
		ID         *string `json:"id"`
		Name       string  `json:"name"`
		ScenarioID string  `json:"scenario_id"`
		Paused     bool    `json:"paused"`
	}
	if err := httpx.DecodeJSON(r, &b, httpx.AdminBody); err != nil {
		return nil, err
	}
	c, err := a.CreateCampaign(r.Context(), app.ID, domain.Campaign{ID: deref(b.ID, uuid.NewString()), Name: b.Name,
		ScenarioID: b.ScenarioID, Paused: b.Paused})
	if err != nil {
		return nil, err
	}
	ps = append(ps, httprouter.Param{Key: "campaign", Value: c.ID})
	return a.getCampaign(r, app, ps)
}

func (a *Admin) setCampaignPaused(paused bool) appHandler {
	return func(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
		if err := a.SetCampaignPaused(r.Context(), app.ID, ps.ByName("campaign"), paused); err != nil {
			return nil, err
		}
		return a.getCampaign(r, app, ps)
	}
}

func (a *Admin) stopCampaign(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	if _, err := a.StopCampaign(r.Context(), app.ID, ps.ByName("campaign")); err != nil {
		return nil, err
	}
	return a.getCampaign(r, app, ps)
}
