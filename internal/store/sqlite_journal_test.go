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

// TestWriterKeepsStatementJournalInMemory: a chunk of contacts inserted
// into a database whose phone index spans many pages changes far more
// than 64 KiB of pages that were there before it, and SQLite's statement
// journal keeps their copies in memory (stmtJournalInMemory), not in a
// temporary file written page by page.
func TestWriterKeepsStatementJournalInMemory(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc/self/fd to see SQLite's temporary files in:", err)
	}
	app := tenant()
	s := openSQLite(t, app)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	randomPhones := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("+8491%07d", rng.IntN(10_000_000))
		}
		return out
	}
	// 20,000 contacts: the phone index's leaves number a hundred or so.
	for range 20 {
		req := contactsRequest(app.ID, "sc", 0, randomPhones(1000)...)
		req.UniquePhone = false
		if _, err := s.Import(ctx, req, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	req := contactsRequest(app.ID, "sc", 0, randomPhones(contactChunk)...)
	req.UniquePhone = false
	job := &importJob{req: req, now: time.Now(), id: domain.NewV7()}
	before := deletedFiles(t)
	var files []string
	err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
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
		t.Errorf("the statement journal went to a temporary file: %v", files)
	}
	var pages int
	if err := s.read.QueryRow(`SELECT count(*) FROM dbstat WHERE name = 'contacts_by_phone'`).Scan(&pages); err == nil && pages < 4*contactChunk/3 {
		t.Fatalf("the phone index has %d pages: too few for the chunk to touch more than 16 of them", pages)
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
