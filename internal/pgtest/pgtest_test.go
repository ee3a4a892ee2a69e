package pgtest

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Each database is new and empty, and settings that make an
// acknowledgement mean a durable commit are on.
func TestDatabase(t *testing.T) {
	ctx := context.Background()
	url := Database(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("new database has %d tables", tables)
	}
	for _, setting := range []string{"fsync", "synchronous_commit"} {
		var v string
		if err := conn.QueryRow(ctx, `SELECT current_setting($1)`, setting).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "on" {
			t.Errorf("%s = %s, want on", setting, v)
		}
	}
	if other := Database(t); other == url {
		t.Errorf("two calls gave the same database %s", url)
	}
}

// A template is prepared once and copied whole for each database asked of
// it; each copy is a database of its own, and Drop removes the template.
func TestTemplate(t *testing.T) {
	ctx := context.Background()
	prepared := 0
	tp := &Template{Prepare: func(ctx context.Context, url string) error {
		prepared++
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `CREATE TABLE t (v integer); INSERT INTO t VALUES (7)`)
		return err
	}}
	var urls []string
	for range 2 {
		url := tp.Database(t)
		urls = append(urls, url)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		var v int
		if err := conn.QueryRow(ctx, `SELECT v FROM t`).Scan(&v); err != nil || v != 7 {
			t.Errorf("copy holds %d (%v), want the prepared row", v, err)
		}
		// A change to one copy is its own.
		if _, err := conn.Exec(ctx, `UPDATE t SET v = 8`); err != nil {
			t.Fatal(err)
		}
		conn.Close(ctx)
	}
	if prepared != 1 || urls[0] == urls[1] {
		t.Errorf("prepared %d times; databases %v", prepared, urls)
	}
	if err := tp.Drop(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, os.Getenv("DIALBOX_TEST_POSTGRES"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var left int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, tp.name).Scan(&left); err != nil || left != 0 {
		t.Errorf("the template is still there after Drop (%d, %v)", left, err)
	}
}
