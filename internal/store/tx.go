package store

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"

	"dialbox/internal/domain"
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
	// writeConfig runs fn in a durable transaction that changes
	// configuration: every node's configuration cache is invalidated once
	// it commits.
	writeConfig func(ctx context.Context, fn func(tx sqldb.Querier) error) error
	// writeData runs fn in a durable transaction that changes no
	// configuration (contacts, calls, wallets' balances, the outbox).
	writeData func(ctx context.Context, fn func(tx sqldb.Querier) error) error
	// writeRerunnable is writeData for fn that may run again from its
	// start, keeping nothing of a run but its transaction's changes and
	// what it sets anew: SQLite's writer runs several of them under one
	// savepoint (writeJob.rerunnable).
	writeRerunnable func(ctx context.Context, fn func(tx sqldb.Querier) error) error
	// phonesBehind: SQLite's phone index is kept behind the imports
	// (phone_index.go), so a search by phone reads it with phoneSeqs.
	phonesBehind bool
}

// settleTx is the part of a transaction that settling a call (endCallTx)
// and queuing its webhook events (outbox) use, so both stores run that
// code, the heart of what a call costs and reports, as one: SQLite's
// *sql.Tx (sqliteTx) and PostgreSQL's pgx.Tx (pgTx). Queries are written
// with ? placeholders, in the SQL both databases speak, and run through
// sqldb (txQueries); only lockUnfinished and execLast are each database's
// own.
type settleTx interface {
	exec(query string, args ...any) error
	// queryRow's Scan returns sql.ErrNoRows when there is no row.
	queryRow(query string, args ...any) sqldb.Row
	queryRows(query string, args []any, row func(scan func(...any) error) error) error
	// lockUnfinished takes the tenant's count of unfinished contacts
	// before a contact's state moves it: imports take it first too, so an
	// import of a phone whose call is ending never deadlocks with it.
	// SQLite's one writer needs no lock.
	lockUnfinished(appID int64) error
	// execLast runs a write to a tenant's hot rows (its count of
	// unfinished contacts, its wallet) as late as possible: at once on
	// SQLite, at the end of the group commit's batch on PostgreSQL when the
	// transaction is a settler's (pgTx's last), so the rows are held for
	// one round trip and the commit.
	execLast(query string, args ...any) error
}

// txQueries is settleTx's queries, the same on both databases: a
// transaction's sqldb.Querier and the context its statements run in.
type txQueries struct {
	ctx context.Context
	q   sqldb.Querier
}

func (t txQueries) exec(query string, args ...any) error {
	_, err := t.q.Exec(t.ctx, query, args...)
	return err
}

func (t txQueries) queryRow(query string, args ...any) sqldb.Row {
	return t.q.QueryRow(t.ctx, query, args...)
}

func (t txQueries) queryRows(query string, args []any, row func(scan func(...any) error) error) error {
	return t.q.Query(t.ctx, query, args, row)
}

// settleOn is settleTx on a transaction's Querier (sqlStore's writeData),
// with its database's lockUnfinished and execLast run at once.
func settleOn(ctx context.Context, q sqldb.Querier) settleTx {
	if q.Dialect() == sqldb.Postgres {
		return pgSettle{txQueries{ctx, q}, nil}
	}
	return sqliteSettle{txQueries{ctx, q}}
}

// sqliteTx is settleTx in the SQLite writer's shared transaction, whose
// statements run to their end whatever a caller's context (sqldb.SQLShared).
func sqliteTx(tx sqldb.SQLQueryer) settleTx {
	return settleOn(context.Background(), sqldb.SQLShared(tx))
}

type sqliteSettle struct{ txQueries }

func (sqliteSettle) lockUnfinished(int64) error { return nil }

func (t sqliteSettle) execLast(query string, args ...any) error { return t.exec(query, args...) }

// pgTx is settleTx in a PostgreSQL transaction. last, when set, collects
// execLast's statements for the end of the batch (Postgres.commit);
// nil: they run at once.
func pgTx(ctx context.Context, tx pgx.Tx, last *[]pgStmt) settleTx {
	return pgSettle{txQueries{ctx, sqldb.PGX(tx)}, last}
}

type pgSettle struct {
	txQueries
	last *[]pgStmt
}

func (t pgSettle) lockUnfinished(appID int64) error {
	return t.execLast(`SELECT 1 FROM queued_contacts WHERE app_id = ? FOR UPDATE`, appID)
}

func (t pgSettle) execLast(query string, args ...any) error {
	if t.last == nil {
		return t.exec(query, args...)
	}
	*t.last = append(*t.last, pgStmt{sqldb.Numbered(query), args})
	return nil
}

// scanErr is the error of a row's Scan as the store answers it: no row is
// domain.ErrNotFound.
func scanErr(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return domain.ErrNotFound
	}
	return err
}
