package admin

import (
	"context"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/recordings"
	"net/http"
	"time"

	"github.com/julienschmidt/httprouter"
)

func (a *Admin) listContacts(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	q := r.URL.Query()
	var err error
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

func (a *Admin) getContact(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	c, calls, err := a.Contact(r.Context(), app.ID, ps.ByName("contact"))
	if err != nil {
		return nil, err
	}
	for i := range calls {
		if calls[i].Recorded {
			calls[i].RecordingURL = recordings.URL(a.recordingBase, app.APIKey, c.ID, calls[i].ID)
		}
	}
	wait, err := ContactWait(r.Context(), a.contacts, app.ID, c, a.sandboxNow.Now())
	return ContactWithCalls{c, wait, calls}, err
}

// getRecording answers a call's recording, the WAV file itself
// (docs/voicebot.md#recordings).
func (a *Admin) getRecording(r *http.Request, ps httprouter.Params) (any, error) {
	return a.Recording(r.Context(), ps.ByName("app"), ps.ByName("contact"), ps.ByName("call"))
}

type ContactWithCalls struct {
	*domain.ContactRecord
	// Waiting explains why a queued contact of an advertising scenario is
	// not dialled now (docs/admin.md#why-a-contact-waits); left out otherwise.
	Waiting *domain.Wait        `json:"waiting,omitempty"`
	Calls   []domain.CallRecord `json:"calls"`
}

func (a *Admin) listImports(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	q := r.URL.Query()
	limit, err := httpx.LimitParam(q)
	if err != nil {
		return nil, err
	}
	list, err := a.contacts.Imports(r.Context(), app.ID, q.Get("scenario_id"), limit)
	return map[string]any{"imports": list}, err
}

func (a *Admin) getImport(r *http.Request, app *domain.Application, ps httprouter.Params) (any, error) {
	im, err := a.contacts.ImportByID(r.Context(), app.ID, ps.ByName("import"))
	if err = notFound(err, "Import"); err != nil {
		return nil, err
	}
	skipped, err := a.contacts.SkippedOf(r.Context(), im.ID)
	if skipped == nil {
		skipped = []domain.SkippedContact{}
	}
	return ImportWithSkipped{im, skipped}, err
}

type ImportWithSkipped struct {
	*domain.ImportRecord
	SkippedContacts []domain.SkippedContact `json:"skipped_contacts"`
}

// ContactWait explains why a queued contact of an advertising scenario is
// not dialled at now, by the rules the engine applies (dialRules.wait);
// nil for any other contact, or one the engine may dial now.
func ContactWait(ctx context.Context, s ContactStore, appID int64, c *domain.ContactRecord, now time.Time) (*domain.Wait, error) {
	if c.State != domain.ContactQueued {
		return nil, nil
	}
	sc, err := s.Scenario(ctx, appID, c.ScenarioID)
	if err != nil || sc.CallConfig.Purpose != domain.PurposeAdvertising {
		return nil, err
	}
	if sc.Status != domain.StatusActive {
		return &domain.Wait{Reason: domain.ReasonScenarioNotActive}, nil
	}
	if c.CampaignID != "" {
		if k, err := s.Campaign(ctx, appID, c.CampaignID); err != nil {
			return nil, err
		} else if k.Paused {
			return &domain.Wait{Reason: domain.ReasonCampaignPaused}, nil
		}
	}
	ads, err := s.AdSettings(ctx, appID)
	if err != nil {
		return nil, err
	}
	rules, err := domain.DialRulesOf(sc.CallConfig, ads, domain.ParseCallWindow)
	if err != nil {
		return nil, err
	}
	timing, err := s.AdTiming(ctx, appID, c, now.Add(-domain.AdDay))
	if err != nil {
		return nil, err
	}
	timing.NextAttempt = c.NextAttemptAt
	return rules.Wait(now, timing), nil
}
