package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"dialbox/internal/pgtest"
	"dialbox/internal/store"
)

func pgPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// pgSchema describes every column, index and trigger of the public schema,
// one line each, sorted: two databases with the same text have the same
// tables.
func pgSchema(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), `
		SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' null=' || is_nullable ||
			' default=' || coalesce(column_default, '') || ' identity=' || is_identity
			FROM information_schema.columns WHERE table_schema = 'public'
		UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
		UNION ALL SELECT 'trigger ' || tgname || ' ' || pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
		UNION ALL SELECT 'constraint ' || conrelid::regclass || ' ' || pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = 'public'::regnamespace
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var l string
		if err := rows.Scan(&l); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

func pgExec(t testing.TB, pool *pgxpool.Pool, query string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func pgInt(t testing.TB, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// A database left at any older version, holding data, migrates to the
// same schema as a new one, and the counts migration 4 starts from the
// rows already there are right.
func TestPostgresMigrationsFromEveryVersion(t *testing.T) {
	ctx := context.Background()
	all := len(postgresMigrations())
	if all < 7 {
		t.Fatalf("schema_postgres.sql has %d migrations, want at least 7", all)
	}
	fresh := pgPool(t)
	if err := store.MigratePostgres(ctx, fresh, postgresMigrations(), all); err != nil {
		t.Fatal(err)
	}
	want := pgSchema(t, fresh)
	for from := 0; from < all; from++ {
		t.Run(fmt.Sprintf("from %d", from), func(t *testing.T) {
			pool := pgPool(t)
			if err := store.MigratePostgres(ctx, pool, postgresMigrations(), from); err != nil {
				t.Fatal(err)
			}
			if v := pgInt(t, pool, `SELECT version FROM dialbox_schema`); v != from {
				t.Fatalf("at version %d, want %d", v, from)
			}
			if from >= 2 {
				// Contacts and a call an older dialbox left: two unfinished
				// contacts, one done.
				pgExec(t, pool, `INSERT INTO applications (id, name, api_key, api_secret, created_at, updated_at) VALUES (1, 'a', 'k', 's', 0, 0)`)
				pgExec(t, pool, `INSERT INTO scenarios (app_id, id, created_at, updated_at) VALUES (1, 'sc', 0, 0)`)
				for i, state := range []string{"queued", "dialing", "done"} {
					pgExec(t, pool, `INSERT INTO contacts (seq, id, app_id, scenario_id, import_id, phone, fields, unique_phone, state, next_attempt_at, created_at, updated_at)
						VALUES ($1, $2, 1, 'sc', 'i', $3, '{}', 1, $4, 0, 0, 0)`, i+1, fmt.Sprint("c", i), fmt.Sprint("+8491300000", i), state)
				}
				pgExec(t, pool, `INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, started_at) VALUES ('call', 2, 1, 1, '+8428', 0)`)
			}
			if err := store.MigratePostgres(ctx, pool, postgresMigrations(), all); err != nil {
				t.Fatal(err)
			}
			if got := pgSchema(t, pool); got != want {
				t.Errorf("schema migrated from %d differs from a new one:\n%s\nwant:\n%s", from, got, want)
			}
			if from >= 2 {
				if n := pgInt(t, pool, `SELECT n FROM queued_contacts WHERE app_id = 1`); n != 2 {
					t.Errorf("queued_contacts = %d, want 2", n)
				}
				// Migration 7 gives the calls already there their scenario.
				if n := pgInt(t, pool, `SELECT count(*) FROM calls WHERE scenario_id = 'sc'`); from < 7 && n != 1 {
					t.Errorf("%d calls carry their scenario, want 1", n)
				}
			}
		})
	}
}

// The triggers keep each application's count of unfinished contacts exact
// through inserts, state changes and deletes, cascading ones included.
func TestPostgresQueuedCountTriggers(t *testing.T) {
	pool := pgPool(t)
	if err := store.MigratePostgres(context.Background(), pool, postgresMigrations(), len(postgresMigrations())); err != nil {
		t.Fatal(err)
	}
	count := func() int { return pgInt(t, pool, `SELECT n FROM queued_contacts WHERE app_id = 1`) }
	pgExec(t, pool, `INSERT INTO applications (id, name, api_key, api_secret, created_at, updated_at) VALUES (1, 'a', 'k', 's', 0, 0)`)
	pgExec(t, pool, `INSERT INTO scenarios (app_id, id, created_at, updated_at) VALUES (1, 'sc', 0, 0)`)
	if n := count(); n != 0 {
		t.Fatalf("new application counts %d", n)
	}
	for i := range 3 {
		pgExec(t, pool, `INSERT INTO contacts (id, app_id, scenario_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
			VALUES ($1, 1, 'sc', 'i', $2, '{}', 1, 0, 0, 0)`, fmt.Sprint("c", i), fmt.Sprint("+8491300000", i))
	}
	steps := []struct {
		query string
		want  int
	}{
		{`UPDATE contacts SET state = 'dialing' WHERE id = 'c0'`, 3},
		{`UPDATE contacts SET state = 'done' WHERE id = 'c0'`, 2},
		{`UPDATE contacts SET state = 'queued' WHERE id = 'c0'`, 3},
		{`UPDATE contacts SET state = 'done' WHERE id = 'c1'`, 2},
		{`DELETE FROM contacts WHERE id = 'c1'`, 2}, // a done one: not counted
		{`DELETE FROM contacts WHERE id = 'c2'`, 1},
		{`DELETE FROM scenarios`, 0}, // cascades to the contacts
	}
	for _, s := range steps {
		pgExec(t, pool, s.query)
		if n := count(); n != s.want {
			t.Fatalf("after %s: count %d, want %d", s.query, n, s.want)
		}
	}

	// Statements of many rows, of two applications at once, and rows
	// inserted done or not inserted at all (ON CONFLICT) are counted right,
	// each application's count updated once per statement, not once per
	// row (migration 13): an import of 500 contacts updates its row once.
	pgExec(t, pool, `INSERT INTO applications (id, name, api_key, api_secret, created_at, updated_at) VALUES (2, 'b', 'k2', 's', 0, 0)`)
	pgExec(t, pool, `INSERT INTO scenarios (app_id, id, created_at, updated_at) VALUES (1, 'sc', 0, 0), (2, 'sc', 0, 0)`)
	count2 := func() int { return pgInt(t, pool, `SELECT coalesce(sum(n), 0) FROM queued_contacts WHERE app_id = 2`) }
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	// The statistics of this backend not yet reported, so counted from
	// before the statement.
	updatesSoFar := func() int {
		var n int
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_xact_user_tables WHERE relname = 'queued_contacts'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := updatesSoFar()
	if _, err := tx.Exec(ctx, `INSERT INTO contacts (id, app_id, scenario_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at, state)
		SELECT 'm' || g, 1, 'sc', 'i', '+849130' || g, '{}', 0, 0, 0, 0, CASE WHEN g % 5 = 0 THEN 'done' ELSE 'queued' END
		FROM generate_series(1000, 1499) g`); err != nil {
		t.Fatal(err)
	}
	if updates := updatesSoFar() - before; updates != 1 {
		t.Errorf("an INSERT of 500 contacts updated the count %d times, want once", updates)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	many := []struct {
		query       string
		want, want2 int
	}{
		{``, 400, 0},
		{`INSERT INTO contacts (id, app_id, scenario_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
			SELECT 'n' || g, 1 + g % 2, 'sc', 'i', '+849131' || g, '{}', 0, 0, 0, 0 FROM generate_series(1000, 1099) g`, 450, 50},
		{`INSERT INTO contacts (id, app_id, scenario_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
			SELECT 'n' || g, 2, 'sc', 'i', '+849131' || g, '{}', 0, 0, 0, 0 FROM generate_series(1050, 1149) g
			ON CONFLICT DO NOTHING`, 450, 100}, // 50 of them already there
		{`DELETE FROM contacts WHERE id LIKE 'n%' AND seq % 3 = 0 OR id LIKE 'm%' AND state = 'done'`, -1, -1},
		{`DELETE FROM applications WHERE id = 2`, -1, 0},
		{`DELETE FROM contacts`, 0, 0},
	}
	for _, s := range many {
		if s.query != "" {
			pgExec(t, pool, s.query)
		}
		want, want2 := s.want, s.want2
		if want < 0 {
			want = pgInt(t, pool, `SELECT count(*) FROM contacts WHERE app_id = 1 AND state <> 'done'`)
		}
		if want2 < 0 {
			want2 = pgInt(t, pool, `SELECT count(*) FROM contacts WHERE app_id = 2 AND state <> 'done'`)
		}
		if n, got2 := count(), count2(); n != want || got2 != want2 {
			t.Fatalf("after %s: counts %d and %d, want %d and %d", s.query, n, got2, want, want2)
		}
	}
}

// Nodes starting together on a new database apply each migration once.
func TestPostgresMigrationsConcurrentNodes(t *testing.T) {
	pool := pgPool(t)
	all := len(postgresMigrations())
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = store.MigratePostgres(context.Background(), pool, postgresMigrations(), all) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("node %d: %v", i, err)
		}
	}
	if v := pgInt(t, pool, `SELECT version FROM dialbox_schema`); v != all {
		t.Errorf("version %d, want %d", v, all)
	}
}

// A database a newer dialbox migrated is refused, not altered.
func TestPostgresRefusesNewerSchema(t *testing.T) {
	pool := pgPool(t)
	all := len(postgresMigrations())
	if err := store.MigratePostgres(context.Background(), pool, postgresMigrations(), all); err != nil {
		t.Fatal(err)
	}
	pgExec(t, pool, `UPDATE dialbox_schema SET version = $1`, all+1)
	err := store.MigratePostgres(context.Background(), pool, postgresMigrations(), all)
	if err == nil || !strings.Contains(err.Error(), "newer dialbox") {
		t.Fatalf("err = %v, want one naming a newer dialbox", err)
	}
}
