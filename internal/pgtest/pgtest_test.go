package pgtest

import (
	"context"
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
