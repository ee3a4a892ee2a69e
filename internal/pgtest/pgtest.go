// Package pgtest gives a test a fresh, empty PostgreSQL database of its
// own. The server is named by DIALBOX_TEST_POSTGRES (a URL whose user may
// create databases; `.ci/postgres` starts a throwaway one and sets it).
// Without it a test skips with the reason, unless DIALBOX_REQUIRE_POSTGRES=1
// (what `.ci/postgres` and CI set) makes the absence a failure, so CI never
// skips silently.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database makes a new empty database for t, dropped when t ends, and
// returns its URL.
func Database(t testing.TB) string {
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
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("DIALBOX_TEST_POSTGRES: %v", err)
	}
	defer admin.Close(context.Background())
	b := make([]byte, 8)
	rand.Read(b)
	name := "dialbox_test_" + hex.EncodeToString(b)
	// template0: an empty database whatever the cluster's template1 holds.
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
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
	u.Path = "/" + name
	return u.String()
}
