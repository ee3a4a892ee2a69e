// Package pgtest gives a test a fresh PostgreSQL database of its own:
// empty (Database), or a copy of one prepared once per test process
// (Template). The server is named by DIALBOX_TEST_POSTGRES (a URL whose
// user may create databases; `.ci/postgres` starts a throwaway one and
// sets it). Without it a test skips with the reason, unless
// DIALBOX_REQUIRE_POSTGRES=1 (what `.ci/postgres` and CI set) makes the
// absence a failure, so CI never skips silently.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database makes a new empty database for t, dropped when t ends, and
// returns its URL.
func Database(t testing.TB) string {
	t.Helper()
	// template0: an empty database whatever the cluster's template1 holds.
	return create(t, server(t), "template0")
}

// Template is a database prepared once, at its first use in the process,
// and copied for every test that asks for one: CREATE DATABASE copying it
// costs what copying an empty one does, where preparing (migrating) a new
// database costs more each time.
type Template struct {
	// Prepare readies the database url names; it must leave no connection
	// to it open (a database is copied only while nobody is connected).
	Prepare func(ctx context.Context, url string) error

	once sync.Once
	base *url.URL // DIALBOX_TEST_POSTGRES when it was made
	name string
	err  error
}

// Database makes a new database for t as a copy of the template, dropped
// when t ends, and returns its URL.
func (tp *Template) Database(t testing.TB) string {
	t.Helper()
	base := server(t)
	tp.once.Do(func() {
		tp.base = base
		tp.name, tp.err = tp.make(base)
	})
	if tp.err != nil {
		t.Fatalf("prepare the template database: %v", tp.err)
	}
	return create(t, base, tp.name)
}

func (tp *Template) make(base *url.URL) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, base.String())
	if err != nil {
		return "", err
	}
	defer admin.Close(context.Background())
	name := newName("dialbox_template_")
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		return "", err
	}
	if err := tp.Prepare(ctx, withPath(base, name)); err != nil {
		admin.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
		return "", err
	}
	// Nothing connects to it any more: a connection would stop the copies.
	if _, err := admin.Exec(ctx, `ALTER DATABASE `+name+` ALLOW_CONNECTIONS false`); err != nil {
		return "", err
	}
	return name, nil
}

// Drop drops the template database, if one was made; TestMain calls it
// once the tests are done.
func (tp *Template) Drop() error {
	if tp.name == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, tp.base.String())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, `DROP DATABASE IF EXISTS `+tp.name+` WITH (FORCE)`)
	return err
}

// server is DIALBOX_TEST_POSTGRES, or skips (fails when required).
func server(t testing.TB) *url.URL {
	t.Helper()
	base := os.Getenv("DIALBOX_TEST_POSTGRES")
	if base == "" {
		if os.Getenv("DIALBOX_REQUIRE_POSTGRES") == "1" {
			t.Fatal("PostgreSQL is required (DIALBOX_REQUIRE_POSTGRES=1) but DIALBOX_TEST_POSTGRES is not set")
		}
		t.Skip("DIALBOX_TEST_POSTGRES is not set: run with .ci/postgres (docs/postgres.md#running-the-tests) to test against PostgreSQL")
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("DIALBOX_TEST_POSTGRES: %v", err)
	}
	return u
}

// create makes a new database for t as a copy of template, dropped when
// t ends, and returns its URL.
func create(t testing.TB, base *url.URL, template string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, base.String())
	if err != nil {
		t.Fatalf("DIALBOX_TEST_POSTGRES: %v", err)
	}
	defer admin.Close(context.Background())
	name := newName("dialbox_test_")
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE `+template+` ENCODING 'UTF8'`); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, base.String())
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer conn.Close(context.Background())
		// FORCE: a pool the test left open must not keep the database.
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return withPath(base, name)
}

func newName(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// withPath is the server's URL naming database name.
func withPath(base *url.URL, name string) string {
	u := *base
	u.Path = "/" + name
	return u.String()
}
