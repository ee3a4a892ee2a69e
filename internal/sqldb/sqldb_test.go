package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	_ "modernc.org/sqlite"
)

func TestNumbered(t *testing.T) {
	for in, want := range map[string]string{
		`SELECT 1`:                             `SELECT 1`,
		`WHERE a = ? AND b = ?`:                `WHERE a = $1 AND b = $2`,
		`WHERE a = '?' AND b = ?`:              `WHERE a = '?' AND b = $1`,
		`VALUES (?, 'it''s ?', ?)`:             `VALUES ($1, 'it''s ?', $2)`,
		`SELECT ? || '' || ?`:                  `SELECT $1 || '' || $2`,
		`SELECT count(*) FROM t WHERE x = ???`: `SELECT count(*) FROM t WHERE x = $1$2$3`,
	} {
		if got := Numbered(in); got != want {
			t.Errorf("Numbered(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSQLQuerier(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	q := SQL(db)
	if q.Dialect() != SQLite || q.Dialect().CollateC() != "" || Postgres.CollateC() != ` COLLATE "C"` {
		t.Fatal("dialects")
	}
	if _, err := q.Exec(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, flag INTEGER)`); err != nil {
		t.Fatal(err)
	}
	n, err := q.Exec(ctx, `INSERT INTO t (name, flag) VALUES (?, 1), (?, 0)`, "b", "a")
	if err != nil || n != 2 {
		t.Fatalf("insert: %d rows, %v", n, err)
	}
	type row struct {
		name string
		flag bool
	}
	scan := func(r Row) (row, error) {
		var v row
		return v, r.Scan(&v.name, &v.flag)
	}
	got, err := Collect(ctx, q, scan, `SELECT name, flag <> 0 FROM t ORDER BY name`+q.Dialect().CollateC())
	if err != nil || len(got) != 2 || got[0] != (row{"a", false}) || got[1] != (row{"b", true}) {
		t.Fatalf("Collect = %v, %v", got, err)
	}
	none, err := Collect(ctx, q, scan, `SELECT name, flag FROM t WHERE id < 0`)
	if err != nil || none == nil || len(none) != 0 {
		t.Fatalf("Collect of no rows = %#v, %v, want an empty list", none, err)
	}
	flags, err := CollectMap(ctx, q, KeyValue[string, int], `SELECT name, flag FROM t WHERE flag >= ?`, 0)
	if err != nil || len(flags) != 2 || flags["a"] != 0 || flags["b"] != 1 {
		t.Fatalf("CollectMap = %v, %v", flags, err)
	}
	if empty, err := CollectMap(ctx, q, KeyValue[string, int], `SELECT name, flag FROM t WHERE id < 0`); err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("CollectMap of no rows = %#v, %v, want an empty map", empty, err)
	}
	if err := q.QueryRow(ctx, `SELECT name FROM t WHERE id = ?`, 99).Scan(new(string)); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("no row: %v", err)
	}
	// A shared transaction's statements run to their end whatever their
	// caller's context.
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := SQLShared(tx).Exec(ended, `INSERT INTO t (name, flag) VALUES (?, 0)`, "c"); err != nil {
		t.Fatalf("a shared transaction's statement stopped with its caller's context: %v", err)
	}
	if _, err := SQL(tx).Exec(ended, `INSERT INTO t (name, flag) VALUES (?, 0)`, "d"); err == nil {
		t.Fatal("a statement of an ended context ran")
	}
}
