package main

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// settleTx is the part of a transaction that settling a call (endCallTx)
// and queuing its webhook events (enqueue) use, so both stores run that
// code, the heart of what a call costs and reports, as one: SQLite's
// *sql.Tx (sqliteTx) and PostgreSQL's pgx.Tx (pgTx). Queries are written
// with ? placeholders, in the SQL both databases speak.
type settleTx interface {
	exec(query string, args ...any) error
	// queryRow's Scan returns sql.ErrNoRows when there is no row.
	queryRow(query string, args ...any) interface{ Scan(...any) error }
	queryRows(query string, args []any, row func(scan func(...any) error) error) error
}

type sqliteTx struct{ tx *sql.Tx }

func (t sqliteTx) exec(query string, args ...any) error {
	_, err := t.tx.Exec(query, args...)
	return err
}

func (t sqliteTx) queryRow(query string, args ...any) interface{ Scan(...any) error } {
	return t.tx.QueryRow(query, args...)
}

func (t sqliteTx) queryRows(query string, args []any, row func(scan func(...any) error) error) error {
	rows, err := t.tx.Query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

type pgTx struct {
	ctx context.Context
	tx  pgx.Tx
}

func (t pgTx) exec(query string, args ...any) error {
	_, err := t.tx.Exec(t.ctx, pgNumbered(query), args...)
	return err
}

func (t pgTx) queryRow(query string, args ...any) interface{ Scan(...any) error } {
	return pgRow{t.tx.QueryRow(t.ctx, pgNumbered(query), args...)}
}

func (t pgTx) queryRows(query string, args []any, row func(scan func(...any) error) error) error {
	rows, err := t.tx.Query(t.ctx, pgNumbered(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return err
		}
	}
	return rows.Err()
}

// numbered caches pgNumbered's answers: the shared queries are constants.
var numbered sync.Map

// pgNumbered rewrites a query's ? placeholders as PostgreSQL's $1, $2...;
// a ? inside a quoted string is left alone.
func pgNumbered(query string) string {
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
