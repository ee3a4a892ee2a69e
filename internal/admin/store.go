package admin

import (
	"context"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
)

// What the admin API asks of the store, one interface per part of a
// tenant, so none grows past what its handlers use. Main hands the same
// store as each.

// AppStore holds the applications, their wallets and their advertising
// settings.
type AppStore interface {
	ListApps(ctx context.Context) ([]*domain.Application, error)
	AppByKey(ctx context.Context, apiKey string) (*domain.Application, error)
	CreateApp(ctx context.Context, name, apiKey, apiSecret string, rules destinations.Rules, now time.Time) (*domain.Application, error)
	UpdateApp(ctx context.Context, apiKey string, p domain.AppPatch, now time.Time) (*domain.Application, error)
	DeleteApp(ctx context.Context, apiKey string) error
	Wallet(ctx context.Context, appID int64) (domain.Wallet, error)
	UpdateWallet(ctx context.Context, appID int64, change func(*domain.Wallet), now time.Time) (domain.Wallet, error)
	TopUp(ctx context.Context, appID int64, amount int64, now time.Time) error
	Unfinished(ctx context.Context, appID int64) (int64, error)
	AdSettings(ctx context.Context, appID int64) (domain.AdSettings, error)
	SetAdSettings(ctx context.Context, appID int64, a domain.AdSettings, now time.Time) error
}

// CallingStore holds what an application calls with: its hotline pools,
// scenarios and campaigns.
type CallingStore interface {
	Pools(ctx context.Context, appID int64, key string) ([]*domain.Pool, error)
	EnabledHotlines(ctx context.Context, appID int64, poolKey string) (domain.PoolLines, error)
	CreatePool(ctx context.Context, appID int64, key, trunk string, numbers []string, now time.Time) error
	DeletePool(ctx context.Context, appID int64, key string) error
	AddHotlines(ctx context.Context, appID int64, pool string, numbers []string) error
	RemoveHotline(ctx context.Context, appID int64, pool, number string) error
	SetHotlineEnabled(ctx context.Context, appID int64, pool, number string, enabled bool) error
	ListScenarios(ctx context.Context, appID int64, status string, limit, offset int) ([]*domain.Scenario, int, error)
	Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error)
	CreateScenario(ctx context.Context, sc *domain.Scenario, now time.Time) error
	UpdateScenario(ctx context.Context, sc *domain.Scenario, now time.Time) error
	DeleteScenario(ctx context.Context, appID int64, id string) error
	TransitionScenario(ctx context.Context, appID int64, id string, from []string, to string, now time.Time) error
	ContactProgress(ctx context.Context, appID int64, scenarioID, campaignID string) (domain.Progress, error)
	ListCampaigns(ctx context.Context, appID int64, scenarioID string) ([]*domain.Campaign, error)
	Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error)
	CreateCampaign(ctx context.Context, c *domain.Campaign, now time.Time) error
	SetCampaignPaused(ctx context.Context, appID int64, id string, paused bool, now time.Time) error
	QueuedOfCampaign(ctx context.Context, appID int64, scenarioID, campaignID string, limit int) ([]domain.DueContact, error)
	HoldContacts(ctx context.Context, holds []domain.CallHold, now, firstTry time.Time) error
}

// ContactStore holds the contacts with their calls and recordings, the
// imports that brought them, and what says why a contact waits
// (ContactWait): its scenario and campaign, the tenant's advertising
// settings, its past calls.
type ContactStore interface {
	Contacts(ctx context.Context, appID int64, f domain.ContactFilter) ([]*domain.ContactRecord, string, error)
	Contact(ctx context.Context, appID int64, id string) (*domain.ContactRecord, []domain.CallRecord, error)
	ContactResults(ctx context.Context, appID int64, f domain.ResultFilter, after int64, limit int) ([]domain.ContactResult, error)
	Outcomes(ctx context.Context, appID int64) ([]string, error)
	CallCounts(ctx context.Context, appID int64, scenarioID, campaignID string, since time.Time) ([]domain.CallCount, error)
	RecordingOf(ctx context.Context, appID int64, contactID, callID string) (int64, error)
	ImportByID(ctx context.Context, appID int64, id string) (*domain.ImportRecord, error)
	Imports(ctx context.Context, appID int64, scenarioID string, limit int) ([]*domain.ImportRecord, error)
	SkippedOf(ctx context.Context, importID string) ([]domain.SkippedContact, error)
	Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error)
	Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error)
	AdSettings(ctx context.Context, appID int64) (domain.AdSettings, error)
	AdTiming(ctx context.Context, appID int64, c *domain.ContactRecord, since time.Time) (domain.ContactTiming, error)
}

// WebhookStore holds the webhook endpoints and their messages.
type WebhookStore interface {
	Endpoints(ctx context.Context, appID int64) ([]*domain.WebhookEndpoint, error)
	Endpoint(ctx context.Context, appID int64, id string) (*domain.WebhookEndpoint, error)
	SaveEndpoint(ctx context.Context, appID int64, e *domain.WebhookEndpoint, now time.Time) error
	DeleteEndpoint(ctx context.Context, appID int64, id string) error
	MessageStates(ctx context.Context, endpointID string) (map[string]int64, error)
	Messages(ctx context.Context, appID int64, f domain.MessageFilter) ([]*domain.WebhookMessage, string, error)
	Message(ctx context.Context, appID int64, id string) (*domain.WebhookMessage, []domain.WebhookAttempt, error)
	Redeliver(ctx context.Context, appID int64, id string, now time.Time) error
	RecoverFailed(ctx context.Context, appID int64, endpointID string, since, now time.Time) (int64, error)
}

// DNCStore holds the do-not-call lists.
type DNCStore interface {
	CountDNC(ctx context.Context, list int64) (int64, time.Time, error)
	AddDNC(ctx context.Context, list int64, phones []string, now time.Time) (int, error)
	LookupDNC(ctx context.Context, tenant int64, e164 string) ([]domain.DNCListing, error)
	RemoveDNC(ctx context.Context, list int64, e164 string) error
	LoadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int)) (int, error)
}

// TokenStore holds the admin token's settings (TokenHash).
type TokenStore interface {
	AdminSetting(ctx context.Context, key string) (string, error)
	SetAdminSetting(ctx context.Context, key, value string) error
	DeleteAdminSettings(ctx context.Context, keys ...string) error
}

// AuditStore holds the audit log of the console's actions
// (docs/console.md#audit-log).
type AuditStore interface {
	AddAudit(ctx context.Context, e domain.AuditEntry) error
	AuditLog(ctx context.Context, before int64, limit int) ([]domain.AuditEntry, error)
}
