package main

import (
	"context"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"dialbox/internal/webhook"
)

// Store is everything the rest of dialbox asks of its database: the public
// API, the importer, the engine, webhook delivery, the admin API, fixtures,
// the CLI, health and metrics go through it and nothing else. store.SQLite
// (internal/store/sqlite.go) is the default, store.Postgres (internal/store/postgres.go) the store of
// several nodes. Most methods are written once, on sqlStore (internal/store/tx.go),
// which both embed (docs/architecture.md#one-query-layer); the design
// behind the methods the engine and delivery call, which several nodes on
// one PostgreSQL must share, is in docs/postgres.md#the-store-interface.
//
// Every write is durable when its method returns without error, and a
// method that fails stored nothing.
type Store interface {
	Close() error

	// ---- health ----

	// Ping commits a no-op write through the store's normal write path.
	Ping(ctx context.Context) error
	// CheckStorage is nil unless a write failed for want of room (a full
	// disk, ...): then it tries a probe write, and the failure is forgotten
	// once one is stored (internal/writehealth).
	CheckStorage(ctx context.Context) error
	// Migrations says which migration the database is at and the last one
	// this dialbox knows.
	Migrations(ctx context.Context) (at, known int, err error)
	// MetricsRows runs one of internal/ops' read-only queries, written in
	// the SQL every store speaks, and hands each row to row.
	MetricsRows(ctx context.Context, query string, row func(scan func(...any) error) error) error

	// ---- caches ----

	// ConfigVersion counts the commits that may have changed the tenants'
	// configuration: this store's own, and those of other connections,
	// processes or nodes it has learnt of. ok is false while the store
	// cannot tell (a PostgreSQL node deaf to the others' changes). The
	// configuration cache (internal/store/cache.go) asks before every read.
	ConfigVersion() (v uint64, ok bool)

	// ---- the public API and imports (store.go) ----

	AppByKey(ctx context.Context, apiKey string) (*domain.Application, error)
	DemoApp(ctx context.Context) (*domain.Application, error)
	CountApps(ctx context.Context) (int, error)
	Wallet(ctx context.Context, appID int64) (domain.Wallet, error)
	WalletExpired(ctx context.Context, appID int64, now time.Time) (bool, error)
	PoolAvailable(ctx context.Context, appID int64, poolKey string) (bool, error)
	Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error)
	ListScenarios(ctx context.Context, appID int64, status string, limit, offset int) ([]*domain.Scenario, int, error)
	Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error)
	Import(ctx context.Context, req domain.ImportRequest, now time.Time) (*domain.ImportResult, error)
	ContactIDs(ctx context.Context, appID int64) (map[string]bool, error)
	SkippedOf(ctx context.Context, importID string) ([]domain.SkippedContact, error)
	ApplyFixtures(ctx context.Context, apps []*store.FixtureApp, now time.Time) error
	// RepointDemoSink points the demo tenant's sink webhook, made by an
	// older dialbox with a server's address, at url.
	RepointDemoSink(ctx context.Context, appID int64, url string, now time.Time) error

	// ---- the engine (internal/store/engine.go; internal/engine says what it asks) ----

	engine.Store

	// ---- webhook delivery (internal/store/webhooks.go) ----

	// webhook.Outbox is what webhook delivery asks of the store
	// (internal/webhook).
	webhook.Outbox

	// ---- calls' recordings (internal/store/recordings.go) ----

	// SetRecordings names the folder of the calls' recordings, whose files
	// the deletes of calls (DeleteApp, DeleteScenario, Reset) remove once
	// committed; none until it is called.
	SetRecordings(f recordings.Files)
	RecordingOf(ctx context.Context, appID int64, contactID, callID string) (int64, error)
	ExpireRecordings(ctx context.Context, before time.Time, limit int) ([]string, error)
	RecordingsKept(ctx context.Context, ids []string) (map[string]recordings.Kept, error)

	// ---- the calling rules at dial time (internal/store/dnc.go, internal/store/adcalls.go) ----

	// DNCListings says which of phones (E.164) are on the tenant's list or,
	// when national is set (advertising calls), on the national register,
	// and which: ReasonDNCNational or ReasonDNCTenant.
	DNCListings(ctx context.Context, appID int64, phones []string, national bool) (map[string]string, error)
	// AppDestinations are the tenant's own prefixes of the destination
	// policy (docs/compliance.md#destinations), from the configuration cache.
	AppDestinations(ctx context.Context, appID int64) (destinations.Rules, error)
	// HoldContacts ends the due contacts a calling rule holds, each
	// with its attempt record, audit row and event, in one commit.
	HoldContacts(ctx context.Context, holds []domain.CallHold, now, firstTry time.Time) error
	// AnsweredAdCalls are, for each of phones, when the tenant's
	// advertising calls to it answered after since.
	AnsweredAdCalls(ctx context.Context, appID int64, phones []string, since time.Time) (map[string][]time.Time, error)
	// DelayContacts moves delayed contacts' next attempts, with their
	// audit rows, in one commit.
	DelayContacts(ctx context.Context, delays []domain.CallDelay, now time.Time) error
	// AdTiming reads what decides a queued advertising contact's
	// wait beside its next attempt: its last delay, the number's answered
	// advertising calls since since, and its calls up (admin.ContactWait).
	AdTiming(ctx context.Context, appID int64, c *domain.ContactRecord, since time.Time) (domain.ContactTiming, error)

	// ---- do-not-call lists (internal/store/dnc.go) ----

	AddDNC(ctx context.Context, list int64, phones []string, now time.Time) (int, error)
	LoadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int)) (int, error)
	CountDNC(ctx context.Context, list int64) (int64, time.Time, error)
	RemoveDNC(ctx context.Context, list int64, e164 string) error
	LookupDNC(ctx context.Context, tenant int64, e164 string) ([]domain.DNCListing, error)

	// ---- advertising settings (internal/store/adcalls.go) ----

	AdSettings(ctx context.Context, appID int64) (domain.AdSettings, error)
	SetAdSettings(ctx context.Context, appID int64, a domain.AdSettings, now time.Time) error

	// ---- the web console's counts (internal/store/console.go) ----

	ContactProgress(ctx context.Context, appID int64, scenarioID, campaignID string) (domain.Progress, error)
	Unfinished(ctx context.Context, appID int64) (int64, error)
	MessageStates(ctx context.Context, endpointID string) (map[string]int64, error)
	Outcomes(ctx context.Context, appID int64) ([]string, error)

	// ---- the admin API and the CLI (internal/store/admin.go) ----

	AdminSetting(ctx context.Context, key string) (string, error)
	SetAdminSetting(ctx context.Context, key, value string) error
	DeleteAdminSettings(ctx context.Context, keys ...string) error
	ListApps(ctx context.Context) ([]*domain.Application, error)
	CreateApp(ctx context.Context, name, apiKey, apiSecret string, rules destinations.Rules, now time.Time) (*domain.Application, error)
	UpdateApp(ctx context.Context, apiKey string, p domain.AppPatch, now time.Time) (*domain.Application, error)
	DeleteApp(ctx context.Context, apiKey string) error
	UpdateWallet(ctx context.Context, appID int64, change func(*domain.Wallet), now time.Time) (domain.Wallet, error)
	TopUp(ctx context.Context, appID int64, amount int64, now time.Time) error
	Pools(ctx context.Context, appID int64, key string) ([]*domain.Pool, error)
	PoolTrunks(ctx context.Context) ([]store.PoolTrunk, error)
	CreatePool(ctx context.Context, appID int64, key, trunk string, numbers []string, now time.Time) error
	DeletePool(ctx context.Context, appID int64, key string) error
	AddHotlines(ctx context.Context, appID int64, pool string, numbers []string) error
	RemoveHotline(ctx context.Context, appID int64, pool, number string) error
	SetHotlineEnabled(ctx context.Context, appID int64, pool, number string, enabled bool) error
	CreateScenario(ctx context.Context, sc *domain.Scenario, now time.Time) error
	UpdateScenario(ctx context.Context, sc *domain.Scenario, now time.Time) error
	DeleteScenario(ctx context.Context, appID int64, id string) error
	TransitionScenario(ctx context.Context, appID int64, id string, from []string, to string, now time.Time) error
	ListCampaigns(ctx context.Context, appID int64, scenarioID string) ([]*domain.Campaign, error)
	CreateCampaign(ctx context.Context, c *domain.Campaign, now time.Time) error
	SetCampaignPaused(ctx context.Context, appID int64, id string, paused bool, now time.Time) error
	Endpoints(ctx context.Context, appID int64) ([]*domain.WebhookEndpoint, error)
	Endpoint(ctx context.Context, appID int64, id string) (*domain.WebhookEndpoint, error)
	SaveEndpoint(ctx context.Context, appID int64, e *domain.WebhookEndpoint, now time.Time) error
	DeleteEndpoint(ctx context.Context, appID int64, id string) error
	Contacts(ctx context.Context, appID int64, f domain.ContactFilter) ([]*domain.ContactRecord, string, error)
	Contact(ctx context.Context, appID int64, id string) (*domain.ContactRecord, []domain.CallRecord, error)
	Imports(ctx context.Context, appID int64, scenarioID string, limit int) ([]*domain.ImportRecord, error)
	ImportByID(ctx context.Context, appID int64, id string) (*domain.ImportRecord, error)
	Messages(ctx context.Context, appID int64, f domain.MessageFilter) ([]*domain.WebhookMessage, string, error)
	Message(ctx context.Context, appID int64, id string) (*domain.WebhookMessage, []domain.WebhookAttempt, error)
	Redeliver(ctx context.Context, appID int64, id string, now time.Time) error
	RecoverFailed(ctx context.Context, appID int64, endpointID string, since, now time.Time) (int64, error)
	Reset(ctx context.Context, apps []*store.FixtureApp, now time.Time) error
}

var (
	_ Store = (*store.SQLite)(nil)
	_ Store = (*store.Postgres)(nil)
)
