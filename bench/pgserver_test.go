package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The throwaway cluster starts, takes dialbox's schema, and the raw
// inserts and COPY store what they count, with the count trigger firing;
// stopping removes the cluster.
func TestPgClusterRawInserts(t *testing.T) {
	if pgBinDir() == "" {
		if os.Getenv("DIALBOX_REQUIRE_POSTGRES") == "1" {
			t.Fatal("PostgreSQL is required (DIALBOX_REQUIRE_POSTGRES=1) but /usr/lib/postgresql/*/bin/initdb is missing")
		}
		t.Skip("PostgreSQL is not installed (apt-get install postgresql): the harness's throwaway cluster cannot be tested")
	}
	s, err := startPgCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop(false)
	if !strings.HasPrefix(s.Version, "PostgreSQL ") || !strings.Contains(s.Settings, "fsync=on") {
		t.Errorf("described as %q, %q", s.Version, s.Settings)
	}
	url, err := s.newDatabase("test")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	schema, err := os.ReadFile("../schema_postgres.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, string(schema)); err != nil {
		t.Fatalf("schema: %v", err)
	}
	var appID int64
	if err := conn.QueryRow(ctx, `INSERT INTO applications (name, api_key, api_secret, created_at, updated_at)
		VALUES ('t', 'k', 's', 0, 0) RETURNING id`).Scan(&appID); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO scenarios (app_id, id, created_at, updated_at) VALUES ($1, 'sc', 0, 0)`, appID); err != nil {
		t.Fatal(err)
	}
	raw, err := rawPgConn(url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close(ctx)
	var sync string
	if err := raw.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&sync); err != nil || sync != "on" {
		t.Errorf("raw inserts' synchronous_commit = %q (%v), want on", sync, err)
	}
	cpu0 := treeCPU(s.pid)
	var total int64
	for _, copyRows := range []bool{false, true} {
		r, err := rawPgInserts(raw, appID, "sc", 10, copyRows, 200*time.Millisecond, 1000, sequentialRow)
		if err != nil {
			t.Fatalf("copy %v: %v", copyRows, err)
		}
		if r.Rows == 0 || r.Rows%10 != 0 {
			t.Errorf("copy %v: %d rows", copyRows, r.Rows)
		}
		total += r.Rows
	}
	var stored, counted int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM contacts), (SELECT n FROM queued_contacts WHERE app_id = $1)`, appID).Scan(&stored, &counted); err != nil {
		t.Fatal(err)
	}
	if stored != total || counted != total {
		t.Errorf("%d rows inserted, %d stored, %d counted by the trigger", total, stored, counted)
	}
	if treeCPU(s.pid) <= cpu0 {
		t.Errorf("the server's CPU did not grow while it inserted (postmaster %d)", s.pid)
	}
	conn.Close(ctx)
	raw.Close(ctx)
	s.stop(false)
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("cluster folder %s left behind: %v", s.dir, err)
	}
}
