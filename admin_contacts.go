package main

import (
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"net/http"

	"github.com/julienschmidt/httprouter"
)

func (a *Admin) listContacts(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	f := domain.ContactFilter{ScenarioID: q.Get("scenario_id"), CampaignID: q.Get("campaign_id"), State: q.Get("state"),
		Outcome: q.Get("outcome"), Phone: q.Get("phone")}
	if !domain.ContactStates[f.State] {
		return nil, domain.Invalid("state", "must be queued, dialing or done")
	}
	if f.Phone != "" {
		if f.Phone, err = a.ContactPhone(f.Phone); err != nil {
			return nil, err
		}
	}
	if f.CursorPage, err = httpx.CursorPageParams(q); err != nil {
		return nil, err
	}
	list, next, err := a.Contacts(r.Context(), app.ID, f)
	return map[string]any{"contacts": list, "next_cursor": next}, err
}

func (a *Admin) getContact(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	c, calls, err := a.Contact(r.Context(), app.ID, ps.ByName("contact"))
	if err != nil {
		return nil, err
	}
	for i := range calls {
		if calls[i].Recorded {
			calls[i].RecordingURL = recordingURL(a.recordingBase, app.APIKey, c.ID, calls[i].ID)
		}
	}
	wait, err := contactWait(r.Context(), a.store, app.ID, c, a.sandboxNow.Now())
	return contactWithCalls{c, wait, calls}, err
}

// getRecording answers a call's recording, the WAV file itself
// (docs/voicebot.md#recordings).
func (a *Admin) getRecording(r *http.Request, ps httprouter.Params) (any, error) {
	return a.Recording(r.Context(), ps.ByName("app"), ps.ByName("contact"), ps.ByName("call"))
}

type contactWithCalls struct {
	*domain.ContactRecord
	// Waiting explains why a queued contact of an advertising scenario is
	// not dialled now (docs/admin.md#why-a-contact-waits); left out otherwise.
	Waiting *domain.Wait        `json:"waiting,omitempty"`
	Calls   []domain.CallRecord `json:"calls"`
}

func (a *Admin) listImports(r *http.Request, ps httprouter.Params) (any, error) {
	app, err := a.app(r, ps)
	if err != nil {
		return nil, err
	}
	q := r.URL.Query()
	limit, err := httpx.LimitParam(q)
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
	if err = notFound(err, "Import"); err != nil {
		return nil, err
	}
	skipped, err := a.store.SkippedOf(r.Context(), im.ID)
	if skipped == nil {
		skipped = []domain.SkippedContact{}
	}
	return importWithSkipped{im, skipped}, err
}

type importWithSkipped struct {
	*domain.ImportRecord
	SkippedContacts []domain.SkippedContact `json:"skipped_contacts"`
}
