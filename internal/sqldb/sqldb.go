// Package sqldb owns how dialbox's store speaks SQL to either database:
// one Querier over SQLite's database/sql and PostgreSQL's pgx, so a query
// is written once, with ? placeholders, in the SQL both speak; and the
// Dialect for the few things the two spell differently
// (docs/architecture.md#one-query-layer).
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Dialect is the database a query runs on.
type Dialect uint8

const (
	SQLite Dialect = iota
	Postgres
)

func (d Dialect) String() string {
	if d == Postgres {
		return "postgres"
	}
	return "sqlite"
}

// CollateC follows a text column that orders or compares: SQLite compares
// text byte by byte, PostgreSQL by its locale unless told "C".
func (d Dialect) CollateC() string {
	if d == Postgres {
		return ` COLLATE "C"`
	}
	return ""
}

// Row is one row of a query; Scan returns sql.ErrNoRows when there is none,
// on either database.
type Row = interface{ Scan(dest ...any) error }

// Querier runs queries written with ? placeholders on the database or in a
// transaction of either kind.
type Querier interface {
	Dialect() Dialect
	// Exec runs a statement and says how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	// Query hands each row to row, in order, and stops at its first error.
	Query(ctx context.Context, query string, args []any, row func(scan func(...any) error) error) error
}

// SQLQueryer is what database/sql's *sql.DB, *sql.Conn and *sql.Tx share.
type SQLQueryer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// SQL is a Querier over SQLite's database/sql.
func SQL(q SQLQueryer) Querier { return sqliteQuerier{q: q} }

// SQLShared is a Querier over a SQLite transaction that the store's one
// writer shares among callers and commits itself (group commit): a
// caller's context ending must not interrupt a statement of a transaction
// others' changes ride in, so its statements run to their end.
func SQLShared(tx SQLQueryer) Querier { return sqliteQuerier{q: tx, shared: true} }

type sqliteQuerier struct {
	q      SQLQueryer
	shared bool
}

func (sqliteQuerier) Dialect() Dialect { return SQLite }

func (s sqliteQuerier) ctx(ctx context.Context) context.Context {
	if s.shared {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

func (s sqliteQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.q.ExecContext(s.ctx(ctx), query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s sqliteQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return s.q.QueryRowContext(s.ctx(ctx), query, args...)
}

func (s sqliteQuerier) Query(ctx context.Context, query string, args []any, row func(scan func(...any) error) error) error {
	rows, err := s.q.QueryContext(s.ctx(ctx), query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return Each(rows, row)
}

// PGXQueryer is what pgx's pool, connection and transaction share.
type PGXQueryer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// PGX is a Querier over PostgreSQL's pgx; its ? placeholders are numbered
// as PostgreSQL's $1, $2, ... (Numbered).
func PGX(q PGXQueryer) Querier { return pgxQuerier{q} }

type pgxQuerier struct{ q PGXQueryer }

func (pgxQuerier) Dialect() Dialect { return Postgres }

func (p pgxQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := p.q.Exec(ctx, Numbered(query), args...)
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (p pgxQuerier) QueryRow(ctx context.Context, query string, args ...any) Row {
	return PGXRow(p.q.QueryRow(ctx, Numbered(query), args...))
}

func (p pgxQuerier) Query(ctx context.Context, query string, args []any, row func(scan func(...any) error) error) error {
	rows, err := p.q.Query(ctx, Numbered(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return Each(rows, row)
}

// Rows is what database/sql's and pgx's rows share.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Each hands each of rows to row, in order, and stops at its first error;
// the caller closes rows.
func Each(rows Rows, row func(scan func(...any) error) error) error {
	scan := rows.Scan // one method value for every row, not one each
	for rows.Next() {
		if err := row(scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// PGXRow is a pgx row whose "no rows" is database/sql's, which the
// scanners both stores share turn into their not-found error.
func PGXRow(r pgx.Row) Row { return pgxRow{r} }

type pgxRow struct{ pgx.Row }

func (r pgxRow) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}

// numbered caches Numbered's answers: queries are constants.
var numbered sync.Map

// Numbered rewrites a query's ? placeholders as PostgreSQL's $1, $2, ...;
// a ? inside a quoted string is left alone.
func Numbered(query string) string {
	if q, ok := numbered.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	n, quoted := 0, false
	for _, r := range query {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == '?' && !quoted:
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	numbered.Store(query, b.String())
	return b.String()
}

// Collect reads every row of a query into a list (empty, not nil, when
// there is none).
func Collect[T any](ctx context.Context, q Querier, scan func(Row) (T, error), query string, args ...any) ([]T, error) {
	out := []T{}
	err := q.Query(ctx, query, args, func(s func(...any) error) error {
		v, err := scan(scanFunc(s))
		if err == nil {
			out = append(out, v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// CollectMap reads every row of a query into a map, scan giving a row's
// key and value (empty, not nil, when there is no row).
func CollectMap[K comparable, V any](ctx context.Context, q Querier, scan func(Row) (K, V, error), query string, args ...any) (map[K]V, error) {
	out := map[K]V{}
	err := q.Query(ctx, query, args, func(s func(...any) error) error {
		k, v, err := scan(scanFunc(s))
		if err == nil {
			out[k] = v
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// KeyValue scans a row of two columns, a key and its value, for
// CollectMap.
func KeyValue[K comparable, V any](r Row) (k K, v V, err error) {
	err = r.Scan(&k, &v)
	return k, v, err
}

type scanFunc func(...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }
