package store

import (
	"context"
	"database/sql"
	"dialbox/internal/sqldb"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Copying one table from SQLite into PostgreSQL, row by row through COPY,
// with the progress migrate-to prints.

func (t copyTable) sqliteSelect() string {
	return `SELECT ` + strings.Join(t.selects, ", ") + ` FROM "` + t.name + `"`
}

// copyTable streams one table through COPY FROM: pgx sends the rows while
// they are read, so memory stays flat whatever the table's size.
func (m *Migration) copyTable(ctx context.Context, tx pgx.Tx, t copyTable) error {
	var total int64
	if err := m.lite.QueryRowContext(ctx, `SELECT count(*) FROM "`+t.name+`"`).Scan(&total); err != nil {
		return err
	}
	rows, err := m.lite.QueryContext(ctx, t.sqliteSelect())
	if err != nil {
		return err
	}
	defer rows.Close()
	p := newCopyProgress(m.out, t.name, total)
	src := &sqliteCopySource{rows: rows, types: t.pgTypes, vals: make([]any, len(t.cols)), progress: p}
	n, err := tx.CopyFrom(ctx, pgx.Identifier{t.name}, t.cols, src)
	p.finish(n, err)
	if err != nil {
		return err
	}
	if n != total {
		return fmt.Errorf("%d rows copied of %d", n, total)
	}
	return nil
}

// sqliteCopySource feeds SQLite's rows to CopyFrom, each value as
// PostgreSQL's column takes it.
type sqliteCopySource struct {
	rows     *sql.Rows
	types    []string
	vals     []any
	err      error
	n        int64
	progress *copyProgress
}

func (s *sqliteCopySource) Next() bool {
	if !s.rows.Next() {
		return false
	}
	s.n++
	s.progress.row(s.n)
	return true
}

func (s *sqliteCopySource) Values() ([]any, error) {
	ptrs := make([]any, len(s.vals))
	for i := range s.vals {
		ptrs[i] = &s.vals[i]
	}
	if err := s.rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	for i, v := range s.vals {
		s.vals[i] = pgValue(v, s.types[i])
	}
	return s.vals, nil
}

func (s *sqliteCopySource) Err() error { return s.rows.Err() }

// pgValue is a SQLite value as PostgreSQL's column of type typ takes it:
// SQLite's 0/1 flags into a boolean, BLOBs into text.
func pgValue(v any, typ string) any {
	switch x := v.(type) {
	case int64:
		if typ == "boolean" {
			return x != 0
		}
	case []byte:
		if typ != "bytea" {
			return string(x)
		}
	}
	return v
}

// copyProgress reports a table's copy: a bar on a terminal, else a line
// every few seconds for a long table, and one line when the table is done.
type copyProgress struct {
	out   io.Writer
	table string
	total int64
	start time.Time
	last  time.Time
	bar   *progressbar.ProgressBar
}

func newCopyProgress(out io.Writer, table string, total int64) *copyProgress {
	p := &copyProgress{out: out, table: table, total: total, start: time.Now(), last: time.Now()}
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) && total > 0 {
		p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(table),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	return p
}

func (p *copyProgress) row(n int64) {
	if n%1000 != 0 {
		return
	}
	if p.bar != nil {
		p.bar.Set64(n)
		return
	}
	if now := time.Now(); now.Sub(p.last) >= progressEvery {
		p.last = now
		fmt.Fprintf(p.out, "  %s: %d of %d rows\n", p.table, n, p.total)
	}
}

func (p *copyProgress) finish(n int64, err error) {
	if p.bar != nil {
		p.bar.Finish()
	}
	if err != nil {
		return
	}
	took := time.Since(p.start)
	fmt.Fprintf(p.out, "  %-20s %10d rows in %s (%.0f rows/s)\n", p.table, n, took.Round(time.Millisecond), float64(n)/max(took.Seconds(), 1e-3))
}

func sqliteColumns(ctx context.Context, db *sql.DB, table string) ([]string, error) {
	return QueryStrings(ctx, sqldb.SQL(db), `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
}
