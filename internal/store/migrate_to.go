package store

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"dialbox/internal/sqldb"
)

// `dialbox migrate-to postgres://...` copies a stopped SQLite database into
// PostgreSQL in one transaction and verifies every table before it commits
// (docs/postgres.md#moving-from-sqlite). It is generic over tables: it
// copies whatever tables the SQLite file has into PostgreSQL's tables of
// the same names, so tables added later need nothing here, only their
// PostgreSQL migration.

func (r migrationTableResult) ok() bool {
	return r.liteRows == r.pgRows && r.liteSum == r.pgSum && r.derivedMismatching == 0
}

// Copy checks the target, migrates it, copies every table in one
// transaction, and commits only when every table verifies: an
// interrupted or failed run leaves the target's tables as they were.
func (m *Migration) Copy(ctx context.Context, replace bool) error {
	if !replace {
		// Checked before migrating too, so a database that is not this
		// one's to fill is refused untouched.
		if err := m.refuseData(ctx, m.pg, nil); err != nil {
			return err
		}
	}
	if err := m.migratePG(ctx, m.pg); err != nil {
		return fmt.Errorf("migrate-to: %s: %w", m.target, err)
	}
	if err := m.plan(ctx); err != nil {
		return err
	}
	start := time.Now()
	var results []migrationTableResult
	err := pgx.BeginFunc(ctx, m.pg, func(tx pgx.Tx) error {
		all, err := pgTableNames(ctx, tx)
		if err != nil {
			return err
		}
		// No dialbox node may write the target while it is being filled:
		// one starting now waits for the commit.
		if _, err := tx.Exec(ctx, `LOCK TABLE `+identList(all)+` IN ACCESS EXCLUSIVE MODE`); err != nil {
			return err
		}
		if replace {
			if _, err := tx.Exec(ctx, `TRUNCATE `+identList(all)); err != nil {
				return err
			}
		} else if err := m.refuseData(ctx, tx, all); err != nil {
			return err
		}
		// Derived tables come from SQLite as its triggers kept them, so
		// PostgreSQL's must not count the copied rows again.
		for _, t := range m.tables {
			if _, err := tx.Exec(ctx, `ALTER TABLE `+pgx.Identifier{t.name}.Sanitize()+` DISABLE TRIGGER USER`); err != nil {
				return err
			}
		}
		rebuild, err := m.dropIndexes(ctx, tx)
		if err != nil {
			return err
		}
		for _, t := range m.tables {
			if err := m.copyTable(ctx, tx, t); err != nil {
				return fmt.Errorf("copy %s: %w", t.name, err)
			}
		}
		built := time.Now()
		for _, stmt := range rebuild {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return fmt.Errorf("%s: %w", stmt, err)
			}
		}
		fmt.Fprintf(m.out, "  indexes and constraints rebuilt in %s\n", time.Since(built).Round(time.Millisecond))
		for _, t := range m.tables {
			if _, err := tx.Exec(ctx, `ALTER TABLE `+pgx.Identifier{t.name}.Sanitize()+` ENABLE TRIGGER USER`); err != nil {
				return err
			}
			for _, col := range t.identity {
				table, c := pgx.Identifier{t.name}.Sanitize(), pgx.Identifier{col}.Sanitize()
				if _, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), coalesce(max(`+c+`), 0) + 1, false) FROM `+table,
					table, col); err != nil {
					return fmt.Errorf("identity %s.%s: %w", t.name, col, err)
				}
			}
		}
		fmt.Fprintf(m.out, "copied in %s; verifying\n", time.Since(start).Round(time.Millisecond))
		if results, err = m.verify(ctx, tx); err != nil {
			return err
		}
		m.printResults(results)
		if bad := mismatching(results); len(bad) > 0 {
			return fmt.Errorf("verification failed for %s: nothing was committed, %s is as it was", strings.Join(bad, ", "), m.target)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate-to: %w", err)
	}
	fmt.Fprintf(m.out, "done in %s: %s holds a verified copy of %s; serve it with --database and retire the SQLite file\n",
		time.Since(start).Round(time.Millisecond), m.target, m.source)
	return nil
}

// dropIndexes drops the copied tables' indexes and keys, and every foreign
// key, returning the statements that make them again. Building an index
// once over the copied rows is many times faster than updating it row by
// row, and a foreign key added back checks every row in one join instead
// of one query per row. All in the copy's transaction: nothing is lost if
// it does not commit.
func (m *Migration) dropIndexes(ctx context.Context, tx pgx.Tx) ([]string, error) {
	names := make([]string, len(m.tables))
	for i, t := range m.tables {
		names[i] = t.name
	}
	type item struct{ drop, make string }
	var keys, indexes, fkeys []item
	rows, err := tx.Query(ctx, `SELECT t.relname::text, k.conname::text, k.contype::text, pg_get_constraintdef(k.oid)
		FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname = current_schema() AND (k.contype = 'f' OR k.contype IN ('p', 'u') AND t.relname = ANY($1))`, names)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var table, name, typ, def string
		if err := rows.Scan(&table, &name, &typ, &def); err != nil {
			return nil, err
		}
		tbl := `ALTER TABLE ` + pgx.Identifier{table}.Sanitize()
		it := item{tbl + ` DROP CONSTRAINT ` + pgx.Identifier{name}.Sanitize(), tbl + ` ADD CONSTRAINT ` + pgx.Identifier{name}.Sanitize() + ` ` + def}
		if typ == "f" {
			fkeys = append(fkeys, it)
		} else {
			keys = append(keys, it)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, `SELECT i.relname::text, pg_get_indexdef(i.oid)
		FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
		JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname = current_schema() AND t.relname = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conrelid = x.indrelid AND k.conindid = x.indexrelid AND k.contype IN ('p', 'u', 'x'))`, names)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			return nil, err
		}
		indexes = append(indexes, item{`DROP INDEX ` + pgx.Identifier{name}.Sanitize(), def})
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Foreign keys go first and come back last: they need the keys.
	var rebuild []string
	for _, list := range [][]item{fkeys, keys, indexes} {
		for _, it := range list {
			if _, err := tx.Exec(ctx, it.drop); err != nil {
				return nil, fmt.Errorf("%s: %w", it.drop, err)
			}
		}
	}
	for _, list := range [][]item{keys, indexes, fkeys} {
		for _, it := range list {
			rebuild = append(rebuild, it.make)
		}
	}
	return rebuild, nil
}

// VerifyOnly compares a copy already made with the SQLite database.
func (m *Migration) VerifyOnly(ctx context.Context) error {
	if err := m.plan(ctx); err != nil {
		return err
	}
	// One snapshot of the target for every table.
	var results []migrationTableResult
	err := pgx.BeginTxFunc(ctx, m.pg, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		results, err = m.verify(ctx, tx)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate-to: %w", err)
	}
	m.printResults(results)
	if bad := mismatching(results); len(bad) > 0 {
		return fmt.Errorf("migrate-to: verification failed for %s: %s is not a copy of %s", strings.Join(bad, ", "), m.target, m.source)
	}
	fmt.Fprintf(m.out, "%s is a verified copy of %s\n", m.target, m.source)
	return nil
}

// refuseData fails when one of the target's tables (all of them when
// tables is nil) holds a row.
func (m *Migration) refuseData(ctx context.Context, q pgQuerier, tables []string) error {
	if tables == nil {
		var err error
		if tables, err = pgTableNames(ctx, q); err != nil {
			return fmt.Errorf("migrate-to: %s: %w", m.target, err)
		}
	}
	for _, t := range tables {
		var some bool
		if err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{t}.Sanitize()+`)`).Scan(&some); err != nil {
			return fmt.Errorf("migrate-to: %s: %w", m.target, err)
		}
		if some {
			return fmt.Errorf("migrate-to: %s already holds data (table %s has rows): copy into an empty database, or pass --replace to empty its tables in the copy's transaction", m.target, t)
		}
	}
	return nil
}

// plan maps every SQLite table and column to PostgreSQL's, and orders the
// tables so that each comes after those its foreign keys reference.
func (m *Migration) plan(ctx context.Context) error {
	type pgColumn struct{ name, typ string }
	pgCols := map[string][]pgColumn{}
	pgIdentity := map[string][]string{}
	rows, err := m.pg.Query(ctx, `SELECT table_name::text, column_name::text, data_type::text, is_identity = 'YES'
		FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	if err != nil {
		return fmt.Errorf("migrate-to: %s: %w", m.target, err)
	}
	for rows.Next() {
		var table string
		var c pgColumn
		var identity bool
		if err := rows.Scan(&table, &c.name, &c.typ, &identity); err != nil {
			return err
		}
		pgCols[table] = append(pgCols[table], c)
		if identity {
			pgIdentity[table] = append(pgIdentity[table], c.name)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}

	liteTables, err := sqliteTables(ctx, m.lite)
	if err != nil {
		return fmt.Errorf("migrate-to: %s: %w", m.source, err)
	}
	var missing []string
	byName := map[string]copyTable{}
	for _, name := range liteTables {
		cols, ok := pgCols[name]
		if !ok {
			missing = append(missing, name)
			continue
		}
		liteCols, err := sqliteColumns(ctx, m.lite, name)
		if err != nil {
			return err
		}
		t := copyTable{name: name, identity: pgIdentity[name]}
		for _, c := range cols {
			expr := ""
			if slices.Contains(liteCols, c.name) {
				expr = `"` + c.name + `"`
			} else if e, ok := pgOnlyColumns[name+"."+c.name]; ok {
				expr = e
			} else {
				continue // PostgreSQL's own, left to its default
			}
			t.selects = append(t.selects, expr)
			t.cols = append(t.cols, c.name)
			t.pgTypes = append(t.pgTypes, c.typ)
		}
		for _, c := range liteCols {
			if !slices.Contains(t.cols, c) {
				return fmt.Errorf("migrate-to: column %s.%s of %s has no counterpart in %s: this dialbox's PostgreSQL schema lacks it", name, c, m.source, m.target)
			}
		}
		byName[name] = t
	}
	if len(missing) > 0 {
		return fmt.Errorf("migrate-to: table %s of %s has no counterpart in %s: this dialbox's PostgreSQL schema lacks it, so the copy would lose it",
			strings.Join(missing, ", "), m.source, m.target)
	}

	deps := map[string][]string{}
	rows, err = m.pg.Query(ctx, `SELECT c.relname::text, r.relname::text FROM pg_constraint k
		JOIN pg_class c ON c.oid = k.conrelid JOIN pg_class r ON r.oid = k.confrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE k.contype = 'f' AND n.nspname = current_schema() AND k.conrelid <> k.confrelid`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var from, to string
		if err := rows.Scan(&from, &to); err != nil {
			return err
		}
		deps[from] = append(deps[from], to)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	placed := map[string]bool{}
	var visit func(name string)
	visit = func(name string) {
		if placed[name] {
			return
		}
		placed[name] = true // before its references: a cycle cannot loop
		for _, d := range deps[name] {
			visit(d)
		}
		if t, ok := byName[name]; ok {
			m.tables = append(m.tables, t)
		}
	}
	for _, name := range liteTables {
		visit(name)
	}
	return nil
}

// verify computes, for each table, the row count and checksum of SQLite's
// rows and of PostgreSQL's (the two read at once), and runs the derived
// tables' recounts.
func (m *Migration) verify(ctx context.Context, tx pgx.Tx) ([]migrationTableResult, error) {
	var results []migrationTableResult
	for _, t := range m.tables {
		r := migrationTableResult{table: t.name}
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() (err error) {
			r.liteRows, r.liteSum, err = sqliteChecksum(gctx, m.lite, t)
			return err
		})
		g.Go(func() (err error) {
			r.pgRows, r.pgSum, err = postgresChecksum(gctx, tx, t)
			return err
		})
		if err := g.Wait(); err != nil {
			return nil, fmt.Errorf("verify %s: %w", t.name, err)
		}
		for _, d := range derivedChecks {
			if d.table == t.name {
				r.derived = true
				if err := tx.QueryRow(ctx, d.query).Scan(&r.derivedMismatching); err != nil {
					return nil, fmt.Errorf("recount %s: %w", t.name, err)
				}
			}
		}
		results = append(results, r)
	}
	return results, nil
}

func (m *Migration) printResults(results []migrationTableResult) {
	tw := tabwriter.NewWriter(m.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tSQLITE ROWS\tPOSTGRESQL ROWS\tSQLITE CHECKSUM\tPOSTGRESQL CHECKSUM\tRESULT")
	for _, r := range results {
		result := "ok"
		switch {
		case r.liteRows != r.pgRows:
			result = "ROW COUNTS DIFFER"
		case r.liteSum != r.pgSum:
			result = "CHECKSUMS DIFFER"
		case r.derivedMismatching > 0:
			result = fmt.Sprintf("RECOUNT DIFFERS (%d rows)", r.derivedMismatching)
		case r.derived:
			result = "ok, recount ok"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\n", r.table, r.liteRows, r.pgRows, r.liteSum, r.pgSum, result)
	}
	tw.Flush()
}

// pgOnlyColumns fill PostgreSQL's own columns (schema_postgres.sql) from
// the SQLite row, keyed "table.column", as a SQLite expression over it.
// PostgreSQL-only columns not named here take their default, which is
// what a row PostgreSQL's migrations found already there would hold.
var pgOnlyColumns = map[string]string{
	// The order imports were made in, which SQLite's admin API reads from
	// its rowid (migration 9).
	"imports.seq": "rowid",
	// What migration 7 fills in for the calls it finds.
	"calls.scenario_id": "(SELECT k.scenario_id FROM contacts k WHERE k.seq = calls.contact_seq)",
	// A call a stopped SQLite dialbox left up is held by no node: a lease
	// that ran out long ago, so the first PostgreSQL node settles it, as
	// SQLite's next start would have.
	"contacts.lease_until": "CASE state WHEN 'dialing' THEN 0 END",
}

// derivedChecks recount the tables PostgreSQL's triggers keep, on the
// copy: they are copied as SQLite's triggers kept them (with PostgreSQL's
// triggers off during the copy), so each query counts the rows where the
// copied table disagrees with the copied rows it derives from. The
// console's counts are read on PostgreSQL as the folded counts plus the
// changes not yet folded (docs/postgres.md#console-counts): the copy
// appends no change, and the recount adds them anyway, so a count copied
// and also appended as a change would show as doubled. A count SQLite
// kept at 0 is no count.
var derivedChecks = []struct{ table, query string }{
	{"queued_contacts", `SELECT count(*) FROM queued_contacts q
		FULL JOIN (SELECT app_id, count(*) AS n FROM contacts WHERE state <> 'done' GROUP BY app_id) c USING (app_id)
		WHERE q.app_id IS NULL OR coalesce(c.n, 0) <> q.n`},
	{"contact_counts", `SELECT count(*) FROM (
			SELECT app_id, scenario_id, campaign_id, state, outcome, sum(n) AS n FROM (
				SELECT app_id, scenario_id, campaign_id, state, outcome, n FROM contact_counts
				UNION ALL SELECT app_id, scenario_id, campaign_id, state, outcome, n FROM contact_count_changes) AS kept
			GROUP BY 1, 2, 3, 4, 5 HAVING sum(n) <> 0) AS q
		FULL JOIN (SELECT app_id, scenario_id, coalesce(campaign_id, '') AS campaign_id, state, coalesce(outcome, '') AS outcome, count(*) AS n
			FROM contacts GROUP BY 1, 2, 3, 4, 5) AS c USING (app_id, scenario_id, campaign_id, state, outcome)
		WHERE q.n IS DISTINCT FROM c.n`},
	{"webhook_counts", `SELECT count(*) FROM (
			SELECT endpoint_id, state, sum(n) AS n FROM (
				SELECT endpoint_id, state, n FROM webhook_counts
				UNION ALL SELECT endpoint_id, state, n FROM webhook_count_changes) AS kept
			GROUP BY 1, 2 HAVING sum(n) <> 0) AS q
		FULL JOIN (SELECT endpoint_id, state, count(*) AS n FROM webhook_messages GROUP BY 1, 2) AS c USING (endpoint_id, state)
		WHERE q.n IS DISTINCT FROM c.n`},
}

// Migration is one run of migrate-to, from the SQLite database lite into
// the pool's PostgreSQL database.
type Migration struct {
	lite           *sql.DB
	pg             *pgxpool.Pool
	out            io.Writer
	source, target string
	// migratePG brings the target's schema up to this dialbox's, whose
	// migrations the caller holds (they are embedded at the root, store.go).
	migratePG func(context.Context, *pgxpool.Pool) error
	tables    []copyTable // in an order foreign keys allow
}

// NewMigration prepares a copy (or a verification) of lite into pg; out is
// told its progress and results, target names the target in them.
func NewMigration(lite *sql.DB, pg *pgxpool.Pool, out io.Writer, source, target string, migratePG func(context.Context, *pgxpool.Pool) error) *Migration {
	return &Migration{lite: lite, pg: pg, out: out, source: source, target: target, migratePG: migratePG}
}

// copyTable is one SQLite table and where its columns go.
type copyTable struct {
	name string
	// selects are the SQLite expressions read, one per cols entry.
	selects []string
	cols    []string
	// pgTypes are cols' PostgreSQL types (information_schema's data_type).
	pgTypes  []string
	identity []string // PostgreSQL identity columns, set past the copied ids
}

// migrationTableResult is one line of the verification's table.
type migrationTableResult struct {
	table              string
	liteRows, pgRows   int64
	liteSum, pgSum     rowsChecksum
	derivedMismatching int64 // rows a derivedCheck found wrong
	derived            bool
}

type pgQuerier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// pgTableNames lists the target's tables but dialbox_schema, which records
// the migrations and is never copied.
func pgTableNames(ctx context.Context, q pgQuerier) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT table_name::text FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'dialbox_schema'
		ORDER BY table_name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

func identList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = pgx.Identifier{n}.Sanitize()
	}
	return strings.Join(quoted, ", ")
}

// sqliteTables are the tables of a SQLite file that PostgreSQL has too:
// all but SQLite's own and the phone index SQLite keeps behind the imports
// (phone_index.go), which PostgreSQL keeps as an index on contacts.
func sqliteTables(ctx context.Context, db *sql.DB) ([]string, error) {
	return QueryStrings(ctx, sqldb.SQL(db), `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
		AND name NOT IN ('contact_phones', 'contact_phones_indexed') ORDER BY name`)
}

const progressEvery = 5 * time.Second

func mismatching(results []migrationTableResult) []string {
	var bad []string
	for _, r := range results {
		if !r.ok() {
			bad = append(bad, r.table)
		}
	}
	return bad
}

// QueryStrings reads a query's one text column.
func QueryStrings(ctx context.Context, q sqldb.Querier, query string, args ...any) ([]string, error) {
	return sqldb.Collect(ctx, q, func(r sqldb.Row) (v string, err error) { return v, r.Scan(&v) }, query, args...)
}
