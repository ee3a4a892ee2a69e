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
	// lockUnfinished takes the tenant's count of unfinished contacts
	// before a contact's state moves it: imports take it first too, so an
	// import of a phone whose call is ending never deadlocks with it.
	// SQLite's one writer needs no lock.
	lockUnfinished(appID int64) error
	// execLast runs a write to a tenant's hot rows (its count of
	// unfinished contacts, its wallet) as late as possible: at once on
	// SQLite, at the end of the group commit's batch on PostgreSQL when the
	// transaction is a settler's (pgTx.last), so the rows are held for one
	// round trip and the commit.
	execLast(query string, args ...any) error
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

func (sqliteTx) lockUnfinished(int64) error { return nil }

func (t sqliteTx) execLast(query string, args ...any) error { return t.exec(query, args...) }

type pgTx struct {
	ctx context.Context
	tx  pgx.Tx
	// last, when set, collects execLast's statements for the end of the
	// batch (PostgresStore.commit); nil: they run at once.
	last *[]pgStmt
}

func (t pgTx) exec(query string, args ...any) error {
	_, err := t.tx.Exec(t.ctx, pgNumbered(query), args...)
	return err
}

func (t pgTx) queryRow(query string, args ...any) interface{ Scan(...any) error } {
	return pgRow{t.tx.QueryRow(t.ctx, pgNumbered(query), args...)}
}

func (t pgTx) lockUnfinished(appID int64) error {
	return t.execLast(`SELECT 1 FROM queued_contacts WHERE app_id = ? FOR UPDATE`, appID)
}

func (t pgTx) execLast(query string, args ...any) error {
	if t.last == nil {
		return t.exec(query, args...)
	}
	*t.last = append(*t.last, pgStmt{pgNumbered(query), args})
	return nil
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
