package sqldb

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
)

func TestIn(t *testing.T) {
	cond, args := In(Postgres, "n", []int64{3, 1})
	if cond != "n = ANY(?)" || !reflect.DeepEqual(args, []any{[]int64{3, 1}}) {
		t.Errorf("postgres: %q %v", cond, args)
	}
	cond, args = In(SQLite, "n", []int64{3, 1})
	if cond != "n IN (?, ?)" || !reflect.DeepEqual(args, []any{int64(3), int64(1)}) {
		t.Errorf("sqlite: %q %v", cond, args)
	}
	if cond, args = In(SQLite, "n", []string{}); cond != "n IN ()" || len(args) != 0 {
		t.Errorf("sqlite, none: %q %v", cond, args)
	}

	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	q := SQL(db)
	if _, err := q.Exec(ctx, `CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3)`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   []int64
		want int
	}{{nil, 0}, {[]int64{2}, 1}, {[]int64{1, 3, 4}, 2}} {
		cond, args := In(q.Dialect(), "n", c.in)
		var got int
		if err := q.QueryRow(ctx, `SELECT count(*) FROM t WHERE `+cond, args...).Scan(&got); err != nil || got != c.want {
			t.Errorf("%v: %d rows, %v; want %d", c.in, got, err, c.want)
		}
	}
}
