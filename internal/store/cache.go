package store

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
)

// Cached keeps a store's reads of the tenants' configuration
// (applications, scenarios, campaigns, pools, ...) in memory between
// changes: every public request reads some of it and it changes rarely.
// The store counts the commits that may change configuration, its own,
// other connections' and other nodes' (ConfigVersion); an entry read at an
// older count is never returned, so a read never sees a value older than
// the last committed change. It has only the reads it keeps: the root puts
// it in front of the rest of the store.
type Cached struct {
	store Catalog

	mu      sync.RWMutex // every request reads; only a miss writes
	at      uint64       // configuration version the entries were read at
	entries map[string]cachedRead
}

// Catalog is what Cached reads through: the configuration reads it keeps
// and the count of changes that says whether a kept one still holds.
type Catalog interface {
	ConfigVersion() (v uint64, ok bool)
	AppByKey(ctx context.Context, apiKey string) (*domain.Application, error)
	Wallet(ctx context.Context, appID int64) (domain.Wallet, error)
	PoolAvailable(ctx context.Context, appID int64, poolKey string) (bool, error)
	Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error)
	Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error)
	AdSettings(ctx context.Context, appID int64) (domain.AdSettings, error)
	ActiveScenarios(ctx context.Context) ([]*domain.Scenario, error)
	EnabledHotlines(ctx context.Context, appID int64, poolKey string) (domain.PoolLines, error)
	AppDestinations(ctx context.Context, appID int64) (destinations.Rules, error)
}

// NewCached wraps s, once, where the store is opened for a server.
func NewCached(s Catalog) *Cached { return &Cached{store: s} }

type cachedRead struct {
	value any
	err   error // errNotFound is remembered too: unknown ids are asked for again and again
}

// maxCachedReads bounds the memory a flood of distinct ids can take.
const maxCachedReads = 10_000

// cached returns the remembered result of load under key, or runs load and
// remembers it. Errors other than errNotFound are never remembered, and
// nothing is while the store cannot tell the configuration's version.
// cacheKey names a read of kind for an application and, where the read
// takes one, an id: built by hand, as reads on every request make one.
func cacheKey(kind string, appID int64, id string) string {
	var b [96]byte
	k := append(b[:0], kind...)
	k = append(k, 0)
	k = strconv.AppendInt(k, appID, 10)
	k = append(k, 0)
	return string(append(k, id...))
}

func cached[T any](s *Cached, key string, load func() (T, error)) (T, error) {
	v, ok := s.store.ConfigVersion()
	if !ok {
		return load()
	}
	s.mu.RLock()
	e, hit := s.entries[key]
	hit = hit && s.at == v
	s.mu.RUnlock()
	if hit {
		return e.value.(T), e.err
	}
	value, err := load()
	if err == nil || errors.Is(err, domain.ErrNotFound) {
		s.mu.Lock()
		// A change committed during load moved the version: what load read
		// may be stale, so it is not kept.
		if now, ok := s.store.ConfigVersion(); ok && now == v {
			if s.at != v || s.entries == nil || len(s.entries) >= maxCachedReads {
				s.entries, s.at = map[string]cachedRead{}, v
			}
			s.entries[key] = cachedRead{value, err}
		}
		s.mu.Unlock()
	}
	return value, err
}

// Keep is cached for a value made from configuration alone outside the
// store: the public API's pages of scenarios (api.go).
func (s *Cached) Keep(key string, load func() (any, error)) (any, error) {
	return cached(s, key, load)
}

// AppByKey: a copy, since callers may change what they get.
func (s *Cached) AppByKey(ctx context.Context, apiKey string) (*domain.Application, error) {
	app, err := cached(s, "app\x00"+apiKey, func() (*domain.Application, error) { return s.store.AppByKey(ctx, apiKey) })
	if err != nil {
		return nil, err
	}
	clone := *app
	return &clone, nil
}

// WalletExpired keeps only what configuration changes of a wallet, whether
// it is prepaid and its expiry; the balance, which calls change, is not kept.
func (s *Cached) WalletExpired(ctx context.Context, appID int64, now time.Time) (bool, error) {
	w, err := cached(s, cacheKey("wallet", appID, ""), func() (domain.Wallet, error) {
		w, err := s.store.Wallet(ctx, appID)
		return domain.Wallet{Prepaid: w.Prepaid, ExpiresAt: w.ExpiresAt}, err
	})
	return w.Expired(now), err
}

func (s *Cached) PoolAvailable(ctx context.Context, appID int64, poolKey string) (bool, error) {
	return cached(s, cacheKey("pool", appID, poolKey), func() (bool, error) {
		return s.store.PoolAvailable(ctx, appID, poolKey)
	})
}

func (s *Cached) Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error) {
	sc, err := cached(s, cacheKey("scenario", appID, id), func() (*domain.Scenario, error) {
		return s.store.Scenario(ctx, appID, id)
	})
	if err != nil {
		return nil, err
	}
	return sc.Clone(), nil
}

func (s *Cached) Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error) {
	c, err := cached(s, cacheKey("campaign", appID, id), func() (*domain.Campaign, error) {
		return s.store.Campaign(ctx, appID, id)
	})
	if err != nil {
		return nil, err
	}
	clone := *c
	return &clone, nil
}

// AdSettings are read by the scheduler at every tick.
func (s *Cached) AdSettings(ctx context.Context, appID int64) (domain.AdSettings, error) {
	return cached(s, cacheKey("advertising", appID, ""), func() (domain.AdSettings, error) {
		return s.store.AdSettings(ctx, appID)
	})
}

// ActiveScenarios are read at every scheduler tick.
func (s *Cached) ActiveScenarios(ctx context.Context) ([]*domain.Scenario, error) {
	list, err := cached(s, "active scenarios", func() ([]*domain.Scenario, error) { return s.store.ActiveScenarios(ctx) })
	if err != nil {
		return nil, err
	}
	out := make([]*domain.Scenario, len(list))
	for i, sc := range list {
		out[i] = sc.Clone()
	}
	return out, nil
}

// EnabledHotlines: the scheduler asks at every tick, and a pool of hundreds
// of numbers read each time was a tenth of the CPU of a busy SIP trunk.
// Callers must not change the slice.
func (s *Cached) EnabledHotlines(ctx context.Context, appID int64, poolKey string) (domain.PoolLines, error) {
	return cached(s, cacheKey("hotlines", appID, poolKey), func() (domain.PoolLines, error) {
		return s.store.EnabledHotlines(ctx, appID, poolKey)
	})
}

func (s *Cached) AppDestinations(ctx context.Context, appID int64) (destinations.Rules, error) {
	return cached(s, cacheKey("destinations", appID, ""), func() (destinations.Rules, error) {
		return s.store.AppDestinations(ctx, appID)
	})
}
