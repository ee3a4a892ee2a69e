package store

import (
	"context"
	"time"
)

// Configuration changes on one node reach every node's configuration cache
// (docs/postgres.md#configuration-changes): a configuration write notifies
// configChannel in its transaction, so PostgreSQL delivers it at commit,
// and every node listens on a connection of its own.

// configChannel is the channel configuration writes notify, with the
// writing node's id.
const configChannel = "dialbox_config"

// listenConfig invalidates the configuration cache at every other node's
// configuration commit until ctx ends. While it is not listening (at
// start, and after a lost connection until it listens again) the cache
// keeps nothing (Postgres.deaf), and once it listens again it drops
// what it may have kept.
func (s *Postgres) listenConfig(ctx context.Context) {
	defer s.done.Done()
	for wait := time.Duration(0); ctx.Err() == nil; wait = min(max(2*wait, 100*time.Millisecond), 5*time.Second) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		if s.listenOnce(ctx) {
			wait = 0
		}
	}
}

// listenOnce listens until the connection fails or ctx ends; it reports
// whether it listened at all.
func (s *Postgres) listenOnce(ctx context.Context) bool {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return false
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `LISTEN `+configChannel); err != nil {
		return false
	}
	s.configChanges.Add(1)
	s.deaf.Store(false)
	defer s.deaf.Store(true)
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			// The connection may be broken: close it rather than give it back.
			conn.Conn().Close(context.Background())
			return true
		}
		if n.Payload != s.node {
			s.configChanges.Add(1)
		}
	}
}
