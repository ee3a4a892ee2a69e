package main

import (
	"context"
	"database/sql"

	"github.com/jackc/pgx/v5"

	"dialbox/internal/sqldb"
)

// sqlStore holds the queries both stores run as one, over sqldb's Querier:
// each written once, with ? placeholders, in the SQL both databases speak
// (sqldb.Dialect for what they spell differently). Both stores embed it,
// built when they open; what is truly one database's own (SQLite's writer
// and prepared statements, PostgreSQL's writers, claims, leases, NOTIFY and
// COPY) stays on the store itself (docs/architecture.md#one-query-layer).
type sqlStore struct {
	// db reads outside a transaction.
	db sqldb.Querier
	// catalog caches configuration reads (cache.go).
	catalog *catalogCache
	// writeConfig runs fn in a durable transaction that changes
	// configuration: every node's configuration cache is invalidated once
	// it commits.
	writeConfig func(ctx context.Context, fn func(tx sqldb.Querier) error) error
	// writeData runs fn in a durable transaction that changes no
	// configuration (contacts, calls, wallets' balances, the outbox).
	writeData func(ctx context.Context, fn func(tx sqldb.Querier) error) error
}

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
	_, err := t.tx.Exec(t.ctx, sqldb.Numbered(query), args...)
	return err
}

func (t pgTx) queryRow(query string, args ...any) interface{ Scan(...any) error } {
	return sqldb.PGXRow(t.tx.QueryRow(t.ctx, sqldb.Numbered(query), args...))
}

func (t pgTx) lockUnfinished(appID int64) error {
	return t.execLast(`SELECT 1 FROM queued_contacts WHERE app_id = ? FOR UPDATE`, appID)
}

func (t pgTx) execLast(query string, args ...any) error {
	if t.last == nil {
		return t.exec(query, args...)
	}
	*t.last = append(*t.last, pgStmt{sqldb.Numbered(query), args})
	return nil
}

func (t pgTx) queryRows(query string, args []any, row func(scan func(...any) error) error) error {
	rows, err := t.tx.Query(t.ctx, sqldb.Numbered(query), args...)
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
