package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// TestContactsInsertKeepsNoStatementJournal: a chunk of contacts inserted
// into a database whose pending-phone index spans many pages changes far more than
// the 64 KiB of pages SQLite keeps of a statement journal in memory, yet
// SQLite opens none: OR FAIL and the deferred key to the scenario leave it
// nothing to undo halfway (docs/benchmarks.md#no-statement-journal-for-contacts).
// With an immediate key or a NOT NULL under ABORT the journal shows as an
// unnamed temporary file.
func TestContactsInsertKeepsNoStatementJournal(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to see SQLite's temporary files in:", err)
	}
	app := tenant()
	s := openSQLite(t, app)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	randomPhones := func(n int) []string { // distinct: none is refused as pending
		out := make([]string, 0, n)
		for len(out) < n {
			if p := fmt.Sprintf("+8491%07d", rng.IntN(10_000_000)); !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
		return out
	}
	// 20,000 contacts whose phones may not repeat: the pending-phone
	// index, keyed by the phone, has a hundred leaves or so.
	for range 20 {
		req := contactsRequest(app.ID, "sc", 0, randomPhones(1000)...)
		req.UniquePhone = true
		if _, err := s.Import(ctx, req, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	var pages int
	if err := s.read.QueryRow(`SELECT count(*) FROM dbstat WHERE name = 'contacts_pending_phone'`).Scan(&pages); err != nil || pages < 4*contactChunk/3 {
		t.Fatalf("the pending-phone index has %d pages: too few for the chunk to touch more than 16 of them (%v)", pages, err)
	}
	req := contactsRequest(app.ID, "sc", 0, randomPhones(contactChunk)...)
	req.UniquePhone = true
	job := &importJob{req: req, now: time.Now(), id: domain.NewV7()}
	before := deletedFiles(t)
	var files []string
	// As a batch of imports runs: at the start of the writer's
	// transaction, under no savepoint (a savepoint journals the pages it
	// changes whatever the statement).
	err := s.writeRerunnable(ctx, func(tx sqldb.SQLQueryer) error {
		dups, err := insertContacts(ctx, sqldb.SQLShared(tx), []*importJob{job})
		if len(dups) > 0 {
			t.Errorf("%d contacts refused, want none", len(dups))
		}
		for _, f := range deletedFiles(t) {
			if !slices.Contains(before, f) {
				files = append(files, f)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) > 0 {
		t.Errorf("SQLite kept a statement journal, in a temporary file: %v", files)
	}
}

// deletedFiles are the files this process holds open that have no name
// (SQLite opens its temporary files so).
func deletedFiles(t *testing.T) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasSuffix(target, " (deleted)") {
			out = append(out, target)
		}
	}
	return out
}

// TestContactsKeyToScenarioCheckedAtCommit: the contacts' key to their
// scenario is deferred (schema.sql's migration 17): a contact of no
// scenario goes in, and the commit refuses it, leaving nothing; an import
// into a missing scenario fails alone, before it inserts (TestImportBatch).
func TestContactsKeyToScenarioCheckedAtCommit(t *testing.T) {
	app := tenant()
	s := openSQLite(t, app)
	ctx := context.Background()
	// The migration edits the table's stored definition: SQLite must
	// still find the database whole.
	var check string
	if err := s.read.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check says %q (%v)", check, err)
	}
	var inserted bool
	err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO contacts
			(id, app_id, scenario_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
			VALUES ('c1', ?, 'missing', 'i1', '+84913000001', '{}', 0, 0, 0, 0)`, app.ID)
		inserted = err == nil
		return err
	})
	if !inserted {
		t.Fatalf("the insert failed at once (%v): the key is not deferred", err)
	}
	if err == nil || !strings.Contains(err.Error(), "FOREIGN KEY") {
		t.Fatalf("the commit said %v, want the foreign key refused", err)
	}
	if got := countSQLite(t, s, `SELECT count(*) FROM contacts`); got != 0 {
		t.Errorf("%d contacts stored, want none", got)
	}
	if _, err := s.Import(ctx, contactsRequest(app.ID, "sc", 0, "+84913000002"), time.Now()); err != nil {
		t.Errorf("an import after the refused commit: %v", err)
	}
}
