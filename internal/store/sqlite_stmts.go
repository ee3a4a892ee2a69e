package store

import (
	"context"
	"database/sql"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/prometheus/client_golang/prometheus"
)

// The SQLite writer's statement cache (docs/operations.md#metrics). The
// driver parses a statement's SQL at every run unless it was prepared, and
// has no cache of its own: parsing was a third of the CPU of a burst of
// settles and deliveries (docs/benchmarks.md#webhook-delivery). A statement
// cannot be prepared through the pool while the writer's transaction holds
// its only connection, so the writer notes the texts its jobs run
// unprepared and, once the transaction is over and the connection free,
// prepares those it has seen twice; from the next transaction on they run
// prepared, bound to it with tx.Stmt. The writer goroutine alone uses it.

// stmtCacheSize bounds the statements kept prepared besides the import's:
// settling, claiming, queuing events and recording attempts need a few
// dozen; texts that vary with a list's length take the rest, the least
// recently used given back first.
const stmtCacheSize = 256

// writeStmts are the statements prepared on the writer's only connection.
type writeStmts struct {
	db                           *sql.DB
	savepoint, release, rollback *sql.Stmt
	// byQuery holds the import's statements by their text, prepared when
	// the store opens and kept: every chunk size of insertContactsSQL,
	// insertJobContactsSQL, insertImportsSQL and insertSkippedSQL, the
	// wallet, a scenario's existence and the counts of unfinished contacts.
	byQuery map[string]*sql.Stmt
	// cache holds every other statement seen twice, the most recently
	// used stmtCacheSize of them.
	cache *simplelru.LRU[string, *sql.Stmt]
	// seen counts the runs of texts not prepared yet, as many texts as
	// the cache holds; fresh are those seen twice in this transaction, to
	// prepare once it is over.
	seen  *simplelru.LRU[string, int]
	fresh []string
	// bound are the statements bound to the transaction under way
	// (tx.Stmt), each bound once however often its jobs run it.
	bound map[string]*sql.Stmt
	m     stmtMetrics
}

// prepare prepares the statements whose tables exist at the schema version
// (older versions are opened by migration tests).
func (w *writeStmts) prepare(db *sql.DB, version int, m stmtMetrics) error {
	w.db, w.m = db, m
	w.cache, _ = simplelru.NewLRU(stmtCacheSize, func(_ string, st *sql.Stmt) {
		st.Close()
		m.evictions.Inc()
	})
	w.seen, _ = simplelru.NewLRU[string, int](stmtCacheSize, nil)
	w.bound = map[string]*sql.Stmt{}
	var err error
	prep := func(query string) *sql.Stmt {
		if err != nil {
			return nil
		}
		var st *sql.Stmt
		st, err = db.Prepare(query)
		return st
	}
	w.savepoint, w.release, w.rollback = prep(`SAVEPOINT job`), prep(`RELEASE job`), prep(`ROLLBACK TO job`)
	w.byQuery = map[string]*sql.Stmt{}
	if version < 1 {
		return err
	}
	queries := append([]string{walletQuery, scenarioExistsSQL}, insertContactsSQL[1:]...)
	queries = append(queries, insertSkippedSQL[1:]...)
	queries = append(queries, insertJobContactsSQL[1:]...)
	queries = append(queries, insertImportsSQL[1:]...)
	if version >= 4 { // queued_contacts
		queries = append(queries, queuedSQL)
	}
	if version >= countedVersion {
		queries = append(queries, countQueuedSQL, countContactsSQL)
	}
	for _, q := range queries {
		if st := prep(q); st != nil {
			w.byQuery[q] = st
		}
	}
	return err
}

// lookup is the statement prepared for query, or nil: then query runs as
// it comes, and is prepared after the transaction if it was seen twice.
func (w *writeStmts) lookup(query string) *sql.Stmt {
	if st := w.byQuery[query]; st != nil {
		w.m.hits.Inc()
		return st
	}
	if st, ok := w.cache.Get(query); ok {
		w.m.hits.Inc()
		return st
	}
	w.m.misses.Inc()
	n, _ := w.seen.Get(query)
	w.seen.Add(query, n+1)
	if n+1 == 2 && len(w.fresh) < stmtCacheSize {
		w.fresh = append(w.fresh, query)
	}
	return nil
}

// txDone forgets the statements bound to the transaction over, and
// prepares the texts seen twice: the writer calls it between transactions,
// when its connection is free. A text that does not prepare (a table gone)
// is left to run as it comes.
func (w *writeStmts) txDone() {
	clear(w.bound)
	for _, q := range w.fresh {
		w.seen.Remove(q)
		if w.cache.Contains(q) {
			continue // counted again after seen forgot it
		}
		st, err := w.db.Prepare(q)
		if err != nil {
			continue
		}
		w.cache.Add(q, st)
		w.m.prepared.Inc()
	}
	w.fresh = w.fresh[:0]
}

func (w *writeStmts) Close() {
	for _, st := range []*sql.Stmt{w.savepoint, w.release, w.rollback} {
		if st != nil {
			st.Close()
		}
	}
	for _, st := range w.byQuery {
		st.Close()
	}
	if w.cache != nil {
		for _, st := range w.cache.Values() {
			st.Close()
		}
	}
}

// preparedTx is a job's view of the writer's transaction: each query runs
// as the statement prepared for its text, if there is one, else as it
// comes (writeStmts.lookup). Other jobs' changes ride in the same
// transaction, so a statement runs to its end whatever its caller's
// context (as sqldb.SQLShared's do).
type preparedTx struct {
	tx    *sql.Tx
	stmts *writeStmts
}

// stmt is query's statement bound to the transaction, nil when it has
// none prepared.
func (p preparedTx) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := p.stmts.bound[query]; st != nil {
		p.stmts.m.hits.Inc()
		return st
	}
	st := p.stmts.lookup(query)
	if st == nil {
		return nil
	}
	st = p.tx.StmtContext(ctx, st)
	p.stmts.bound[query] = st
	return st
}

func (p preparedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = uncancelled(ctx)
	if st := p.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.tx.ExecContext(ctx, query, args...)
}

func (p preparedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	ctx = uncancelled(ctx)
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.tx.QueryContext(ctx, query, args...)
}

func (p preparedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	ctx = uncancelled(ctx)
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.tx.QueryRowContext(ctx, query, args...)
}

// stmtMetrics count what the writer's statement cache did.
type stmtMetrics struct {
	hits, misses, prepared, evictions prometheus.Counter
}

func newStmtMetrics() stmtMetrics {
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "dialbox_sqlite_statement_cache_" + name, Help: help})
	}
	return stmtMetrics{
		hits:      counter("hits_total", "Statements the SQLite writer ran prepared."),
		misses:    counter("misses_total", "Statements the SQLite writer ran unprepared, their SQL parsed again."),
		prepared:  counter("prepared_total", "Statements the SQLite writer prepared into its cache, once seen twice."),
		evictions: counter("evictions_total", "Prepared statements the SQLite writer gave back, the least recently used beyond its bound."),
	}
}

// uncancelled is ctx without its cancellation, ctx itself when it has none.
func uncancelled(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
