package main

import (
	"context"
	"time"

	"dialbox/internal/admin"
	"dialbox/internal/auth"
	"dialbox/internal/cli"
	"dialbox/internal/dnc"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/importer"
	"dialbox/internal/ops"
	"dialbox/internal/recordings"
	"dialbox/internal/sandbox"
	"dialbox/internal/store"
	"dialbox/internal/webhook"
)

// Store is what Main holds of either store, store.SQLite or store.Postgres
// (internal/store), and hands to each part: the union of the narrow
// interfaces the parts declare, with what Main itself calls. The rules
// every implementation keeps, and the design behind the methods several
// nodes on one PostgreSQL must share, are in
// docs/postgres.md#the-store-interface.
//
// Every write is durable when its method returns without error, and a
// method that fails stored nothing.
type Store interface {
	// What each part declares it asks of the store.
	engine.Store
	webhook.Outbox
	importer.Store
	auth.Store
	sandbox.Campaigns
	recordings.SweptStore
	dnc.Store
	store.Catalog
	ops.Database
	admin.AppStore
	admin.CallingStore
	admin.ContactStore
	admin.WebhookStore
	admin.DNCStore
	admin.TokenStore
	admin.AuditStore
	cli.Store

	// What Main itself calls: at start, on a reset, at the end.
	mainStore
}

// mainStore is what Main asks of the store itself.
type mainStore interface {
	Close() error
	DemoApp(ctx context.Context) (*domain.Application, error)
	CountApps(ctx context.Context) (int, error)
	ApplyFixtures(ctx context.Context, apps []*store.FixtureApp, now time.Time) error
	RepointDemoSink(ctx context.Context, appID int64, url string, now time.Time) error
	PoolTrunks(ctx context.Context) ([]store.PoolTrunk, error)
	ScenarioScripts(ctx context.Context) ([]store.ScenarioScript, error)
	Reset(ctx context.Context, apps []*store.FixtureApp, now time.Time) error
}

var (
	_ Store = (*store.SQLite)(nil)
	_ Store = (*store.Postgres)(nil)
)
