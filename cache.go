package main

import (
	"errors"
	"sync"
	"sync/atomic"
)

// catalogCache keeps reads of the tenants' configuration (applications,
// scenarios, campaigns) in memory between writes. Every public request reads
// some of it and it changes rarely; any commit that may change it
// invalidates the whole cache (Store.commit), and so does any commit made
// by another connection or process (watch), so a read never sees a value
// older than the last committed change.
type catalogCache struct {
	version atomic.Uint64 // bumped after every commit that may change configuration
	watch   *commitWatch  // other connections' commits (catalog_watch.go)
	// deaf is set while a PostgreSQL node does not hear other nodes'
	// configuration commits (store_postgres_notify.go): nothing is kept
	// then, every read goes to the database.
	deaf atomic.Bool

	mu      sync.RWMutex // every request reads; only a miss writes
	at      uint64       // version the entries were read at
	entries map[string]cachedRead
}

type cachedRead struct {
	value any
	err   error // errNotFound is remembered too: unknown ids are asked for again and again
}

// maxCachedReads bounds the memory a flood of distinct ids can take.
const maxCachedReads = 10_000

func (c *catalogCache) invalidate() { c.version.Add(1) }

// cached returns the remembered result of load under key, or runs load and
// remembers it. Errors other than errNotFound are never remembered.
func cached[T any](c *catalogCache, key string, load func() (T, error)) (T, error) {
	if c.watch != nil { // SQLite's; nil on PostgreSQL
		c.watch.check(c)
	}
	if c.deaf.Load() {
		return load()
	}
	v := c.version.Load()
	c.mu.RLock()
	e, ok := c.entries[key]
	ok = ok && c.at == v
	c.mu.RUnlock()
	if ok {
		return e.value.(T), e.err
	}
	value, err := load()
	if err == nil || errors.Is(err, errNotFound) {
		c.mu.Lock()
		// A write committed during load bumped the version: what load read
		// may be stale, so it is not kept.
		if c.version.Load() == v {
			if c.at != v || c.entries == nil || len(c.entries) >= maxCachedReads {
				c.entries, c.at = map[string]cachedRead{}, v
			}
			c.entries[key] = cachedRead{value, err}
		}
		c.mu.Unlock()
	}
	return value, err
}
