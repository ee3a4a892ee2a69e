package main

// The machine's limits: a bare net/http server (run as a child process of
// the harness, like every server under test) and raw SQLite batch inserts
// into dialbox's own contacts table.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/store"

	"github.com/google/uuid"
	_ "modernc.org/sqlite"
)

// smallJSON is what the bare handler answers: about the size of an error
// body of the public API.
var smallJSON = []byte(`{"status":1,"result":{"scenarios":[],"total_count":0}}`)

// serveBare is the `bench bare-server ADDR` subcommand: GET /small answers
// smallJSON; POST /decode reads a body of contacts, decodes it as dialbox
// does (encoding/json, numbers kept), and answers how many it held.
func serveBare(addr string) error {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /small", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(smallJSON)))
		w.Write(smallJSON)
	})
	mux.HandleFunc("POST /decode", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 16<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var v struct {
			Contacts []any `json:"contacts"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := []byte(`{"status":1,"count":` + strconv.Itoa(len(v.Contacts)) + `}`)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.Write(out)
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stdout, "listening", ln.Addr())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// RawInsertResult is one raw SQLite insert run.
type RawInsertResult struct {
	Batch   int
	Rows    int64
	Elapsed time.Duration
}

func (r RawInsertResult) RowsPerSec() float64 { return float64(r.Rows) / r.Elapsed.Seconds() }

// sqliteDSN opens a file the way dialbox's writer does: WAL,
// synchronous=FULL, foreign keys on, the writer's cache and checkpoints.
func sqliteDSN(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(FULL)&_txlock=immediate" +
		store.WriterPragmas
}

// rawRow is what a raw insert writes of one contact besides the values
// every row of a commit shares.
type rawRow struct{ phone, fields string }

// opARows are the rows dialbox stores for operation A's 100-contact
// bodies, in the bodies' order: each phone as dialbox normalizes it and
// the fields it echoes. Raw inserts of these rows update the phone index
// at the same scattered places dialbox's writer does
// (docs/benchmarks.md#the-raw-insert-reference).
func opARows() ([]rawRow, error) {
	var rows []rawRow
	for _, body := range contactBodies(100, 8) {
		var req struct {
			Contacts []map[string]string `json:"contacts"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return nil, err
		}
		for _, c := range req.Contacts {
			phone, err := domain.NormalizePhone(c["phone_number"], "VN")
			if err != nil {
				return nil, fmt.Errorf("operation A's phone %q: %w", c["phone_number"], err)
			}
			echo := map[string]string{"so_dien_thoai": phone}
			for k, v := range c {
				if k != "phone_number" {
					echo[k] = v
				}
			}
			rows = append(rows, rawRow{phone, string(domain.StringMapJSON(echo))})
		}
	}
	return rows, nil
}

// sequentialRow is the i-th row of ascending phones: the phone index only
// grows at its end, the cheapest case an index has.
func sequentialRow(i int64) rawRow {
	phone := "+8491" + strconv.Itoa(1000000+int(i%9000000))
	return rawRow{phone, `{"danh_xung":"Anh","ho_ten":"Nguyen Van A","so_dien_thoai":"` + phone + `"}`}
}

// bareContactsTable is the contacts table with its columns and one index,
// its primary key: what an import costs SQLite with nothing to find the
// rows by afterwards.
const bareContactsTable = `CREATE TABLE contacts (
	id TEXT PRIMARY KEY, app_id INTEGER NOT NULL, scenario_id TEXT NOT NULL, campaign_id TEXT, import_id TEXT NOT NULL,
	phone TEXT NOT NULL, fields TEXT NOT NULL, unique_phone INTEGER NOT NULL,
	next_attempt_at INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)`

// createBareContacts makes a database holding only bareContactsTable.
func createBareContacts(dbPath string) error {
	db, err := sql.Open("sqlite", sqliteDSN(dbPath))
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.Exec(bareContactsTable)
	return err
}

// rawInserts inserts contact rows into a copy of an empty dialbox database
// (same schema, indexes and pragmas) from one goroutine with one prepared
// statement, batch rows per durable commit, for at most dur or maxRows rows;
// row(i) is the i-th row's phone and fields. The other values are what
// dialbox writes for a contact: a UUIDv7 and an import id.
func rawInserts(dbPath string, appID int64, scenarioID string, batch int, dur time.Duration, maxRows int64, row func(i int64) rawRow) (RawInsertResult, error) {
	db, err := sql.Open("sqlite", sqliteDSN(dbPath))
	if err != nil {
		return RawInsertResult{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	stmt, err := db.Prepare(`INSERT INTO contacts
		(id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return RawInsertResult{}, fmt.Errorf("raw insert: %w", err)
	}
	defer stmt.Close()
	// The schema's bookkeeping is part of the limit: from schema.sql's
	// migration 14 whoever inserts contacts counts them, once per commit
	// here as dialbox's import does once per request; before it, row
	// triggers did. A bare table has no counts to keep.
	var triggers, countTables int
	if err := db.QueryRow(`SELECT count(*) FILTER (WHERE type = 'trigger' AND name = 'contact_counts_insert'),
		count(*) FILTER (WHERE type = 'table' AND name = 'contact_counts') FROM sqlite_master`).Scan(&triggers, &countTables); err != nil {
		return RawInsertResult{}, err
	}
	var counts []string
	if triggers == 0 && countTables > 0 {
		counts = []string{`UPDATE queued_contacts SET n = n + ? WHERE app_id = ?`,
			`INSERT INTO contact_counts (app_id, scenario_id, campaign_id, state, outcome, n) VALUES (?, ?, '', 'queued', '', ?)
				ON CONFLICT DO UPDATE SET n = n + excluded.n`}
	}
	// So is the phone index from migration 18: whoever inserts contacts
	// adds them to it behind the inserts, in batches, as dialbox's writer
	// does after its commits.
	var behind int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'contact_phones_indexed'`).Scan(&behind); err != nil {
		return RawInsertResult{}, err
	}
	ctx := context.Background()
	var rows, unindexed int64
	start := time.Now()
	deadline := start.Add(dur)
	for rows < maxRows && time.Now().Before(deadline) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return RawInsertResult{}, err
		}
		st := tx.Stmt(stmt)
		importID := uuid.NewString()
		at := time.Now().UnixMilli()
		for i := 0; i < batch; i++ {
			id, _ := uuid.NewV7()
			r := row(rows + int64(i))
			if _, err := st.Exec(id.String(), appID, scenarioID, nil, importID, r.phone, r.fields, 0, at, at, at); err != nil {
				tx.Rollback()
				return RawInsertResult{}, fmt.Errorf("raw insert: %w", err)
			}
		}
		if counts != nil {
			_, err1 := tx.Exec(counts[0], batch, appID)
			_, err2 := tx.Exec(counts[1], appID, scenarioID, batch)
			if err := errors.Join(err1, err2); err != nil {
				tx.Rollback()
				return RawInsertResult{}, fmt.Errorf("raw insert: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return RawInsertResult{}, err
		}
		rows += int64(batch)
		if unindexed += int64(batch); behind > 0 && unindexed >= store.PhoneIndexEvery {
			n, err := store.IndexPhoneBatch(db)
			if err != nil {
				return RawInsertResult{}, fmt.Errorf("raw insert: %w", err)
			}
			unindexed = max(unindexed-n, 0)
		}
	}
	return RawInsertResult{Batch: batch, Rows: rows, Elapsed: time.Since(start)}, nil
}
