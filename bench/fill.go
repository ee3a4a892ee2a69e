package main

// Pre-filling the database for the growth measurements. The default fill
// is direct SQL on the stopped server's database: rows are copied from a
// contact (and its import) that dialbox itself stored through operation A,
// so every column, default and index is exactly what the API writes, with
// only the contact id (UUIDv7-shaped, ordered), phone and import id varied.
// The alternative (-fill api) sends 1000-contact requests of operation A.

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"dialbox/internal/sqldb"
	"dialbox/internal/store"
)

// countContacts counts the rows of the contacts table.
func countContacts(dbPath string) (int64, error) {
	db, err := sql.Open("sqlite", sqliteDSN(dbPath))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRow(`SELECT count(*) FROM contacts`).Scan(&n)
	return n, err
}

// dbFilesSize is the size of the database with its WAL and shared memory.
func dbFilesSize(dbPath string) int64 {
	var total int64
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if st, err := os.Stat(dbPath + suffix); err == nil {
			total += st.Size()
		}
	}
	return total
}

func tableColumns(db *sql.DB, table string) ([]string, error) {
	rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// sqlFill adds n contacts to the bench scenario, 1000 per import, in
// transactions of chunk rows. first numbers the rows so repeated fills make
// distinct ids.
func sqlFill(dbPath string, first, n int64) (time.Duration, error) {
	start := time.Now()
	db, err := sql.Open("sqlite", sqliteDSN(dbPath))
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	var tmplSeq int64
	var tmplImport string
	err = db.QueryRow(`SELECT seq, import_id FROM contacts WHERE scenario_id = ? AND state = 'queued' ORDER BY seq DESC LIMIT 1`,
		benchScenarioID).Scan(&tmplSeq, &tmplImport)
	if err != nil {
		return 0, fmt.Errorf("fill: no queued contact of %s to copy (operation A must have stored one first): %w", benchScenarioID, err)
	}
	ccols, err := tableColumns(db, "contacts")
	if err != nil {
		return 0, err
	}
	icols, err := tableColumns(db, "imports")
	if err != nil {
		return 0, err
	}
	// Ids: 2025-01-01 as the UUIDv7 time (older than every id the API
	// makes), then the row number, so filled ids are ordered like real ones.
	const idExpr = `printf('01941f29-7c00-7%03x-8%03x-%012x', (n.i >> 40) & 4095, (n.i >> 28) & 4095, n.i & 281474976710655)`
	contactExpr := map[string]string{
		"seq":       "",
		"id":        idExpr,
		"phone":     `printf('+84912%06d', n.i % 1000000)`,
		"import_id": `printf('fill-import-%012d', n.i / 1000)`,
		"fields":    `json_set(t.fields, '$.so_dien_thoai', printf('+84912%06d', n.i % 1000000))`,
	}
	importExpr := map[string]string{
		"id":        `printf('fill-import-%012d', n.i)`,
		"requested": "1000", "added": "1000", "skipped": "0", "code": "1",
	}
	insertSQL := func(verb, table string, cols []string, exprs map[string]string, where string) string {
		var names, values []string
		for _, c := range cols {
			e, ok := exprs[c]
			if ok && e == "" {
				continue // assigned by SQLite
			}
			if !ok {
				e = "t." + c
			}
			names = append(names, c)
			values = append(values, e)
		}
		return `WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
			` + verb + ` ` + table + ` (` + strings.Join(names, ", ") + `)
			SELECT ` + strings.Join(values, ", ") + ` FROM n, ` + table + ` AS t WHERE ` + where
	}
	insContacts := insertSQL("INSERT INTO", "contacts", ccols, contactExpr, "t.seq = ?")
	insImports := insertSQL("INSERT OR IGNORE INTO", "imports", icols, importExpr, "t.id = ?")

	// From schema.sql's migration 14 the import counts the contacts it adds
	// (no INSERT trigger does): the fill adds its rows to the same counts,
	// like the template row it copies. An older dialbox's triggers count
	// them themselves.
	var triggers int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'contact_counts_insert'`).Scan(&triggers); err != nil {
		return 0, err
	}
	counts := []string{
		`UPDATE queued_contacts SET n = n + ? WHERE app_id = (SELECT app_id FROM contacts WHERE seq = ? AND state <> 'done')`,
		`INSERT INTO contact_counts (app_id, scenario_id, campaign_id, state, outcome, n)
			SELECT app_id, scenario_id, coalesce(campaign_id, ''), state, coalesce(outcome, ''), ? FROM contacts WHERE seq = ?
			ON CONFLICT DO UPDATE SET n = n + excluded.n`,
	}
	if triggers > 0 {
		counts = nil
	}
	// From schema.sql's migration 18 the phone index is kept behind the
	// imports: the fill adds its rows to it as dialbox's writer would, so
	// the server starts with none waiting.
	var behind int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'contact_phones_indexed'`).Scan(&behind); err != nil {
		return 0, err
	}

	const chunk = 200_000
	for done := int64(0); done < n; {
		k := min(chunk, n-done)
		lo, hi := first+done, first+done+k
		tx, err := db.Begin()
		if err != nil {
			return 0, err
		}
		if _, err := tx.Exec(insContacts, lo, hi, tmplSeq); err != nil {
			tx.Rollback()
			return 0, fmt.Errorf("fill contacts: %w", err)
		}
		if _, err := tx.Exec(insImports, lo/1000, (hi+999)/1000, tmplImport); err != nil {
			tx.Rollback()
			return 0, fmt.Errorf("fill imports: %w", err)
		}
		for _, q := range counts {
			if _, err := tx.Exec(q, k, tmplSeq); err != nil {
				tx.Rollback()
				return 0, fmt.Errorf("fill counts: %w", err)
			}
		}
		if behind > 0 {
			if _, err := store.IndexPhones(context.Background(), sqldb.SQL(tx), math.MaxInt32); err != nil {
				tx.Rollback()
				return 0, fmt.Errorf("fill the phone index: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return 0, err
		}
		done += k
	}
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

func openDB(path string) (*sql.DB, error) { return sql.Open("sqlite", sqliteDSN(path)) }
