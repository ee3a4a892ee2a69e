package admin

import (
	"context"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/recordings"
	"dialbox/internal/sandbox"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
)

// The admin API's services: the reads and actions its handlers share with
// the console (docs/console.md), each rule written once here: which error
// a missing record is, who is woken after a change. The console declares
// the parts it uses (console.Reads, Actions, Sandbox); the handlers add
// the HTTP around them.

// notFound is err, or the answer naming what when the store found no such
// record.
func notFound(err error, what string) error {
	if errors.Is(err, domain.ErrNotFound) {
		return domain.NotFound(what)
	}
	return err
}

// exists is err, or, when the store holds such a record already, the
// answer saying so (format and args name it).
func exists(err error, format string, args ...any) error {
	if errors.Is(err, domain.ErrConflict) {
		return domain.Conflict(format, args...)
	}
	return err
}

// ---- reads ----

// ListApps lists every application.
func (a *Admin) ListApps(ctx context.Context) ([]*domain.Application, error) {
	return a.apps.ListApps(ctx)
}

// App finds an application by its API key.
func (a *Admin) App(ctx context.Context, key string) (*domain.Application, error) {
	app, err := a.apps.AppByKey(ctx, key)
	return app, notFound(err, "Application")
}

// Wallet is an application's wallet.
func (a *Admin) Wallet(ctx context.Context, appID int64) (domain.Wallet, error) {
	return a.apps.Wallet(ctx, appID)
}

// Unfinished counts an application's contacts not yet done.
func (a *Admin) Unfinished(ctx context.Context, appID int64) (int64, error) {
	return a.apps.Unfinished(ctx, appID)
}

// Pools lists an application's hotline pools.
func (a *Admin) Pools(ctx context.Context, appID int64) ([]*domain.Pool, error) {
	return a.calling.Pools(ctx, appID, "")
}

// ListScenarios lists a page of an application's scenarios, with their total.
func (a *Admin) ListScenarios(ctx context.Context, appID int64, status string, limit, offset int) ([]*domain.Scenario, int, error) {
	return a.calling.ListScenarios(ctx, appID, status, limit, offset)
}

// Scenario finds one of an application's scenarios.
func (a *Admin) Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error) {
	sc, err := a.calling.Scenario(ctx, appID, id)
	return sc, notFound(err, "Scenario")
}

// ContactProgress counts a scenario's contacts, or a campaign's.
func (a *Admin) ContactProgress(ctx context.Context, appID int64, scenarioID, campaignID string) (domain.Progress, error) {
	return a.calling.ContactProgress(ctx, appID, scenarioID, campaignID)
}

// ScenarioHold applies dialHold to a scenario as the scheduler would at
// now: why it is not dialled, if it is not.
func (a *Admin) ScenarioHold(ctx context.Context, appID int64, wallet domain.Wallet, sc *domain.Scenario, now time.Time) (domain.Hold, bool, error) {
	in := domain.DialInputs{Status: sc.Status, Wallet: wallet, Pool: sc.CallConfig.PoolHotlineKey}
	in.Window, in.WindowErr = domain.ParseCallWindow(sc.CallConfig.CallWindow)
	lines, err := a.calling.EnabledHotlines(ctx, appID, sc.CallConfig.PoolHotlineKey)
	if err != nil {
		return domain.Hold{}, false, err
	}
	in.EnabledHotlines = len(lines.Numbers)
	if sc.CallConfig.Purpose == domain.PurposeAdvertising && in.WindowErr == nil {
		ads, err := a.apps.AdSettings(ctx, appID)
		if err != nil {
			return domain.Hold{}, false, err
		}
		if in.AdHours, err = domain.ParseCallWindow(ads.Window()); err != nil {
			return domain.Hold{}, false, err
		}
	}
	h, held := domain.DialHold(in, now)
	return h, held, nil
}

// ListCampaigns lists an application's campaigns, or a scenario's.
func (a *Admin) ListCampaigns(ctx context.Context, appID int64, scenarioID string) ([]*domain.Campaign, error) {
	return a.calling.ListCampaigns(ctx, appID, scenarioID)
}

// Campaign finds one of an application's campaigns.
func (a *Admin) Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error) {
	c, err := a.calling.Campaign(ctx, appID, id)
	return c, notFound(err, "Campaign")
}

// ContactPhone reads a contact filter's phone as the contacts store it.
func (a *Admin) ContactPhone(phone string) (string, error) {
	p, err := domain.NormalizePhone(phone, a.region)
	if err != nil {
		return "", domain.Invalid("phone", err.Error())
	}
	return p, nil
}

// Contacts lists a page of an application's contacts, and the next page's cursor.
func (a *Admin) Contacts(ctx context.Context, appID int64, f domain.ContactFilter) ([]*domain.ContactRecord, string, error) {
	return a.contacts.Contacts(ctx, appID, f)
}

// Outcomes are the outcomes an application's contacts ended with.
func (a *Admin) Outcomes(ctx context.Context, appID int64) ([]string, error) {
	return a.contacts.Outcomes(ctx, appID)
}

// CallCounts are an application's calls started and ended per minute
// since since: of a scenario, a campaign, or all (docs/console.md#charts).
func (a *Admin) CallCounts(ctx context.Context, appID int64, scenarioID, campaignID string, since time.Time) ([]domain.CallCount, error) {
	return a.contacts.CallCounts(ctx, appID, scenarioID, campaignID, since)
}

// Contact finds one of an application's contacts, with its calls.
func (a *Admin) Contact(ctx context.Context, appID int64, id string) (*domain.ContactRecord, []domain.CallRecord, error) {
	c, calls, err := a.contacts.Contact(ctx, appID, id)
	return c, calls, notFound(err, "Contact")
}

// Recording is a call's recording, the WAV file itself
// (docs/voicebot.md#recordings).
func (a *Admin) Recording(ctx context.Context, appKey, contactID, callID string) (*httpx.ServedFile, error) {
	app, err := a.App(ctx, appKey)
	if err != nil {
		return nil, err
	}
	size, err := a.contacts.RecordingOf(ctx, app.ID, contactID, callID)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return nil, domain.NotFound("Call")
	case err != nil:
		return nil, err
	case size == 0 || a.recordings.Dir == "":
		return nil, domain.NotFound("Recording")
	}
	return &httpx.ServedFile{Path: a.recordings.Path(callID), Name: callID + recordings.Ext, ContentType: "audio/wav",
		Missing: domain.NotFound("Recording")}, nil
}

// Endpoints lists an application's webhook endpoints.
func (a *Admin) Endpoints(ctx context.Context, appID int64) ([]*domain.WebhookEndpoint, error) {
	return a.webhooks.Endpoints(ctx, appID)
}

// Endpoint finds one of an application's webhook endpoints.
func (a *Admin) Endpoint(ctx context.Context, appID int64, id string) (*domain.WebhookEndpoint, error) {
	e, err := a.webhooks.Endpoint(ctx, appID, id)
	return e, notFound(err, "Webhook endpoint")
}

// MessageStates counts an endpoint's messages by state.
func (a *Admin) MessageStates(ctx context.Context, endpointID string) (map[string]int64, error) {
	return a.webhooks.MessageStates(ctx, endpointID)
}

// Messages lists a page of an application's webhook messages, and the next page's cursor.
func (a *Admin) Messages(ctx context.Context, appID int64, f domain.MessageFilter) ([]*domain.WebhookMessage, string, error) {
	return a.webhooks.Messages(ctx, appID, f)
}

// Message finds one of an application's webhook messages, with its attempts.
func (a *Admin) Message(ctx context.Context, appID int64, id string) (*domain.WebhookMessage, []domain.WebhookAttempt, error) {
	m, attempts, err := a.webhooks.Message(ctx, appID, id)
	return m, attempts, notFound(err, "Webhook message")
}

// ---- actions ----

// SetCampaignPaused pauses or resumes a campaign; the engine looks again.
func (a *Admin) SetCampaignPaused(ctx context.Context, appID int64, id string, paused bool) error {
	if err := notFound(a.calling.SetCampaignPaused(ctx, appID, id, paused, a.now()), "Campaign"); err != nil {
		return err
	}
	a.wake(appID)
	return nil
}

// CreateScenario checks and stores a new scenario: DRAFT unless the body
// says otherwise, a new id unless it names one.
func (a *Admin) CreateScenario(ctx context.Context, appID int64, b *domain.ScenarioChange) (*domain.Scenario, error) {
	sc := &domain.Scenario{AppID: appID, ID: deref(b.ID, uuid.NewString()), Status: deref(b.Status, domain.StatusDraft),
		PersonalizedFields: []string{}, CallConfig: domain.DefaultCallConfig()}
	if err := applyChange(b, sc); err != nil {
		return nil, err
	}
	if err := a.runnable(b, sc); err != nil {
		return nil, err
	}
	return sc, exists(a.calling.CreateScenario(ctx, sc, a.now()), "Scenario %q already exists", sc.ID)
}

// UpdateScenario applies a change to a scenario; its id and status do not
// change here (status: TransitionScenario).
func (a *Admin) UpdateScenario(ctx context.Context, appID int64, id string, b *domain.ScenarioChange) error {
	switch {
	case b.ID != nil:
		return domain.Invalid("id", "cannot be changed")
	case b.Status != nil:
		return domain.Invalid("status", "changes only through submit, approve, reject and edit")
	}
	sc, err := a.Scenario(ctx, appID, id)
	if err != nil {
		return err
	}
	if err := applyChange(b, sc); err != nil {
		return err
	}
	if err := a.runnable(b, sc); err != nil {
		return err
	}
	return notFound(a.calling.UpdateScenario(ctx, sc, a.now()), "Scenario")
}

// TransitionScenario moves a scenario along the transition named name
// (submit, approve, reject, edit: docs/admin.md#routes); the engine looks
// again.
func (a *Admin) TransitionScenario(ctx context.Context, appID int64, id, name string) error {
	i := slices.IndexFunc(Transitions, func(t Transition) bool { return t.Name == name })
	if i < 0 {
		return domain.Invalid("transition", "must be submit, approve, reject or edit")
	}
	t := Transitions[i]
	err := a.calling.TransitionScenario(ctx, appID, id, t.From, t.To, a.now())
	var bad domain.ErrBadTransition
	switch {
	case errors.Is(err, domain.ErrNotFound):
		return domain.NotFound("Scenario")
	case errors.As(err, &bad):
		return domain.Conflict("%s", t.Refused(bad.Status))
	case err != nil:
		return err
	}
	a.wake(appID)
	return nil
}

// TransitionsFrom names the transitions a scenario in status may take.
func (a *Admin) TransitionsFrom(status string) []string {
	var out []string
	for _, t := range Transitions {
		if slices.Contains(t.From, status) {
			out = append(out, t.Name)
		}
	}
	return out
}

// CreateCampaign stores a new campaign (its id, name, scenario, and
// whether it starts paused) on one of the application's scenarios.
func (a *Admin) CreateCampaign(ctx context.Context, appID int64, k domain.Campaign) (*domain.Campaign, error) {
	c := &domain.Campaign{AppID: appID, ID: k.ID, Name: k.Name, ScenarioID: k.ScenarioID, Paused: k.Paused}
	switch {
	case c.ID == "":
		return nil, domain.Invalid("id", "must not be empty")
	case c.ScenarioID == "":
		return nil, domain.Invalid("scenario_id", "is required")
	}
	if _, err := a.Scenario(ctx, appID, c.ScenarioID); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return nil, domain.Invalid("scenario_id", fmt.Sprintf("%q is not a scenario of this application", c.ScenarioID))
		}
		return nil, err
	}
	return c, exists(a.calling.CreateCampaign(ctx, c, a.now()), "Campaign %q already exists", c.ID)
}

// stopChunk is how many queued contacts one commit of a stop ends.
const stopChunk = 500

// StopCampaign stops a campaign: it is paused, and each contact it still
// has queued ends CANCELED without a call (an attempt never placed, its
// call_blocks row, its contact.completed event), stopChunk to a commit;
// calls up finish (docs/admin.md#campaigns). It says how many it ended.
func (a *Admin) StopCampaign(ctx context.Context, appID int64, id string) (int, error) {
	k, err := a.Campaign(ctx, appID, id)
	if err != nil {
		return 0, err
	}
	if err := a.SetCampaignPaused(ctx, appID, id, true); err != nil {
		return 0, err
	}
	ended := 0
	for {
		queued, err := a.calling.QueuedOfCampaign(ctx, appID, k.ScenarioID, id, stopChunk)
		if err != nil || len(queued) == 0 {
			return ended, err
		}
		holds := make([]domain.CallHold, len(queued))
		for i, c := range queued {
			holds[i] = domain.CallHold{AppID: appID, ScenarioID: k.ScenarioID, Contact: c,
				Reason: domain.ReasonCampaignStopped, Outcome: domain.OutcomeCanceled}
		}
		now := a.now()
		if err := a.calling.HoldContacts(ctx, holds, now, now); err != nil {
			return ended, err
		}
		ended += len(queued)
		a.wakeWebhooks()
	}
}

// Redeliver makes a webhook message due now, with the same webhook-id.
func (a *Admin) Redeliver(ctx context.Context, appID int64, id string) error {
	if err := notFound(a.webhooks.Redeliver(ctx, appID, id, a.now()), "Webhook message"); err != nil {
		return err
	}
	a.wakeWebhooks()
	return nil
}

// RecoverFailed puts an endpoint's messages dead since then back in the
// outbox, due now, and says how many.
func (a *Admin) RecoverFailed(ctx context.Context, appID int64, endpointID string, since time.Time) (int64, error) {
	n, err := a.webhooks.RecoverFailed(ctx, appID, endpointID, since, a.now())
	if err != nil {
		return 0, err
	}
	a.wakeWebhooks()
	return n, nil
}

// Audit appends an entry to the audit log, stamped now.
func (a *Admin) Audit(ctx context.Context, e domain.AuditEntry) error {
	e.At = a.now()
	return a.audit.AddAudit(ctx, e)
}

// AuditLog lists up to limit entries of the audit log, newest first,
// before the entry seq before (0: from the newest).
func (a *Admin) AuditLog(ctx context.Context, before int64, limit int) ([]domain.AuditEntry, error) {
	return a.audit.AuditLog(ctx, before, limit)
}

// ---- the sandbox ----

// AddFault checks a new fault rule (checkFault) and adds it.
func (a *Admin) AddFault(ctx context.Context, b *sandbox.FaultBody) (*sandbox.FaultRule, error) {
	rule, err := a.checkFault(ctx, b)
	if err != nil {
		return nil, err
	}
	a.faults.Add(rule)
	return rule, nil
}

// FaultRules lists the fault rules.
func (a *Admin) FaultRules() []sandbox.FaultRule { return a.faults.List() }

// RemoveFault removes a fault rule.
func (a *Admin) RemoveFault(id string) error {
	if !a.faults.Remove(id) {
		return domain.NotFound("Fault rule")
	}
	return nil
}

// RealTime says the server makes real calls: its time scale is fixed at 1.
func (a *Admin) RealTime() bool { return a.clock == nil }
