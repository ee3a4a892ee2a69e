package store

// Imports in SQLite's writer: those queued side by side run together
// (importBatch), with the results and counts they would have one by one.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// queueImports queues imports for s's writer in this order while the
// writer is held, then lets it go, so that they run in one batch; it
// returns their answers in the same order.
func queueImports(t *testing.T, s *SQLite, reqs []domain.ImportRequest) []error {
	t.Helper()
	held, release := make(chan struct{}), make(chan struct{})
	blocker := writeJob{fn: func(sqldb.SQLQueryer) error { close(held); <-release; return nil }, result: make(chan error, 1)}
	s.jobs <- blocker
	<-held
	errs := make([]error, len(reqs))
	done := make(chan int, len(reqs))
	for i, req := range reqs {
		go func() {
			_, errs[i] = s.Import(context.Background(), req, time.Now())
			done <- i
		}()
		waitFor(t, fmt.Sprintf("import %d to queue", i), func() bool { return len(s.jobs) == i+1 })
	}
	close(release)
	if err := <-blocker.result; err != nil {
		t.Fatal(err)
	}
	for range reqs {
		<-done
	}
	return errs
}

// contactsRequest is an import of one contact a phone into the test
// tenant's scenario, at most max unfinished contacts.
func contactsRequest(appID int64, scenario string, max int64, phones ...string) domain.ImportRequest {
	req := domain.ImportRequest{AppID: appID, ScenarioID: scenario, UniquePhone: true, MaxQueued: max}
	for i, p := range phones {
		fields, _ := json.Marshal(map[string]string{"so_dien_thoai": p})
		req.Contacts = append(req.Contacts, domain.NewContact{Position: i, Input: map[string]any{"phone_number": p},
			ID: domain.NewV7(), Fields: fields, Phone: p})
	}
	return req
}

// TestImportBatch: imports queued together get what each would get alone,
// in their order: a repeat of a phone queued by an import before it is
// skipped, the queue bound refuses the one that would overflow it and no
// other (one whose repeats keep it within the bound passes), an import
// into a missing scenario fails alone; and the counts stay exact.
func TestImportBatch(t *testing.T) {
	app := tenant()
	s := openSQLite(t, app)
	const max = 5
	skippedUpFront := contactsRequest(app.ID, "sc", max)
	skippedUpFront.Skipped = []domain.SkippedContact{{Position: 0, Input: json.RawMessage(`{"phone_number":"x"}`), Reason: "invalid phone"}}
	reqs := []domain.ImportRequest{
		contactsRequest(app.ID, "sc", max, "+84913000001", "+84913000002"), // 2 queued
		contactsRequest(app.ID, "sc", max, "+84913000001"),                 // a repeat: nothing added
		contactsRequest(app.ID, "sc", max, "+84913000003", "+84913000004"), // 4 queued
		contactsRequest(app.ID, "sc", max, "+84913000002", "+84913000005"), // one repeat, so 5 queued: within the bound
		contactsRequest(app.ID, "sc", max, "+84913000006"),                 // 6: over it
		contactsRequest(app.ID, "missing", max, "+84913000007"),            // no such scenario
		skippedUpFront,
	}
	errs := queueImports(t, s, reqs)
	var full *domain.Error
	for i, want := range []func(error) bool{
		func(err error) bool { return err == nil },
		func(err error) bool { return errors.Is(err, domain.ErrAllInvalid) },
		func(err error) bool { return err == nil },
		func(err error) bool { return err == nil },
		func(err error) bool { return errors.As(err, &full) && full.Code == domain.EQUEUEFULL },
		func(err error) bool { return errors.Is(err, domain.ErrNotFound) },
		func(err error) bool { return errors.Is(err, domain.ErrAllInvalid) },
	} {
		if !want(errs[i]) {
			t.Errorf("import %d: %v", i, errs[i])
		}
	}
	if got := countSQLite(t, s, `SELECT count(*) FROM contacts`); got != 5 {
		t.Errorf("%d contacts stored, want 5", got)
	}
	if got := countSQLite(t, s, `SELECT n FROM queued_contacts WHERE app_id = ?`, app.ID); got != 5 {
		t.Errorf("queued_contacts says %d, want 5", got)
	}
	if got := countSQLite(t, s, `SELECT n FROM contact_counts WHERE app_id = ? AND scenario_id = 'sc' AND state = 'queued'`, app.ID); got != 5 {
		t.Errorf("contact_counts says %d, want 5", got)
	}
	// Failed imports record nothing; the others their row and skips.
	rows, err := s.read.Query(`SELECT requested, added, skipped, code FROM imports ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var requested, added, skipped, code int
		rows.Scan(&requested, &added, &skipped, &code)
		got = append(got, fmt.Sprintf("%d/%d/%d/%d", requested, added, skipped, code))
	}
	want := []string{"2/2/0/1", "1/0/1/1403", "2/2/0/1", "2/1/1/1", "1/0/1/1403"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("imports (requested/added/skipped/code) %v, want %v", got, want)
	}
	if got := countSQLite(t, s, `SELECT count(*) FROM skipped_contacts`); got != 3 {
		t.Errorf("%d skipped contacts recorded, want 3", got)
	}
}

// TestImportBatchCountsOnce: imports queued together add their contacts
// to the application's count in one statement, not one each.
func TestImportBatchCountsOnce(t *testing.T) {
	app := tenant()
	s := openSQLite(t, app)
	ctx := context.Background()
	// A temporary trigger lives on the writer's connection alone, and
	// counts the committed updates of the application's count.
	if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `CREATE TEMP TABLE counted (n INTEGER);
			CREATE TEMP TRIGGER counting AFTER UPDATE ON main.queued_contacts BEGIN INSERT INTO counted VALUES (1); END`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var reqs []domain.ImportRequest
	for i := range 10 {
		reqs = append(reqs, contactsRequest(app.ID, "sc", 100, fmt.Sprintf("+8491300%04d", i)))
	}
	for i, err := range queueImports(t, s, reqs) {
		if err != nil {
			t.Errorf("import %d: %v", i, err)
		}
	}
	var updates int
	if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		return tx.QueryRowContext(ctx, `SELECT count(*) FROM counted`).Scan(&updates)
	}); err != nil {
		t.Fatal(err)
	}
	if updates != 1 {
		t.Errorf("10 imports in one batch updated the count %d times, want once", updates)
	}
	if got := countSQLite(t, s, `SELECT n FROM queued_contacts WHERE app_id = ?`, app.ID); got != 10 {
		t.Errorf("queued_contacts says %d, want 10", got)
	}
}

// recordingQuerier notes the statements run through it: Exec's, and
// Query's (which read rows back).
type recordingQuerier struct {
	sqldb.Querier
	execs, queries []string
}

func (r *recordingQuerier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	r.execs = append(r.execs, query)
	return r.Querier.Exec(ctx, query, args...)
}

func (r *recordingQuerier) Query(ctx context.Context, query string, args []any, row func(scan func(...any) error) error) error {
	r.queries = append(r.queries, query)
	return r.Querier.Query(ctx, query, args, row)
}

// TestInsertContactsReadsBackOnlyWhenRowsWereRefused: contacts go in
// with INSERTs that read nothing back (RETURNING was over a quarter of the
// writer's CPU per contact, docs/benchmarks.md#the-writers-cpu-per-contact),
// a large job's in statements of its own; only a statement that stored
// fewer rows than it was given is followed by a read of which, and those
// refused come back as duplicates.
func TestInsertContactsReadsBackOnlyWhenRowsWereRefused(t *testing.T) {
	app := tenant()
	s := openSQLite(t, app)
	ctx := context.Background()
	repeatable := func(phones ...string) *importJob {
		req := contactsRequest(app.ID, "sc", 0, phones...)
		req.UniquePhone = false
		return &importJob{req: req, now: time.Now(), id: domain.NewV7()}
	}
	unique := func(phones ...string) *importJob {
		return &importJob{req: contactsRequest(app.ID, "sc", 0, phones...), now: time.Now(), id: domain.NewV7()}
	}
	many, others := make([]string, contactChunk+10), make([]string, jobChunkMin)
	for i := range many {
		many[i] = fmt.Sprintf("+8491300%04d", i)
	}
	for i := range others {
		others[i] = fmt.Sprintf("+8491400%04d", i)
	}
	for _, tc := range []struct {
		name    string
		jobs    []*importJob
		execs   []string
		queries int
		dups    []int // positions, across the jobs, of the contacts refused
	}{
		{"repeats allowed", []*importJob{repeatable(many...), repeatable("+84913000001")},
			[]string{insertJobContactsSQL[contactChunk], insertJobContactsSQL[10], insertContactsSQL[1]}, 0, nil},
		{"unique phones, none pending", []*importJob{repeatable("+84913000001"), unique("+84913000001", "+84913000002")},
			[]string{insertContactsSQL[3]}, 0, nil},
		{"a phone pending, one repeated", []*importJob{unique("+84913000002", "+84913000003", "+84913000003"), repeatable("+84913000002")},
			[]string{insertContactsSQL[4]}, 1, []int{0, 2}},
		{"a phone pending in a large job", []*importJob{unique(append([]string{"+84913000003"}, others...)...)},
			[]string{insertJobContactsSQL[jobChunkMin+1]}, 1, []int{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec *recordingQuerier
			var dups map[string]bool
			if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
				rec = &recordingQuerier{Querier: sqldb.SQLShared(tx)}
				var err error
				dups, err = insertContacts(ctx, rec, tc.jobs)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rec.execs, tc.execs) || len(rec.queries) != tc.queries {
				t.Errorf("ran %q and read back %d times, want %q and %d", rec.execs, len(rec.queries), tc.execs, tc.queries)
			}
			var want []string
			pos := 0
			for _, job := range tc.jobs {
				for _, c := range job.req.Contacts {
					if slices.Contains(tc.dups, pos) {
						want = append(want, c.ID)
					}
					pos++
				}
			}
			if len(dups) != len(want) {
				t.Errorf("refused %v, want %v", dups, want)
			}
			for _, id := range want {
				if !dups[id] {
					t.Errorf("contact %s not refused", id)
				}
			}
			// Stored in the order given: listings follow seq.
			for _, job := range tc.jobs {
				var given, stored []string
				for _, c := range job.req.Contacts {
					if !dups[c.ID] {
						given = append(given, c.ID)
					}
				}
				rows, err := s.read.Query(`SELECT id FROM contacts WHERE import_id = ? ORDER BY seq`, job.id)
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var id string
					rows.Scan(&id)
					stored = append(stored, id)
				}
				rows.Close()
				if !slices.Equal(stored, given) {
					t.Errorf("import %s stored %v in seq order, want %v", job.id, stored, given)
				}
			}
		})
	}
}

// TestRecordImportsWritesSkippedTogether: the skipped contacts of the
// imports of a batch go in importChunk to a statement, not one statement
// each (most of the writer's time for imports of phones pending already,
// docs/benchmarks.md#the-writers-cpu-per-contact), each as it came.
func TestRecordImportsWritesSkippedTogether(t *testing.T) {
	app := tenant()
	s := openSQLite(t, app)
	ctx := context.Background()
	var jobs []*importJob
	want := map[string]string{}
	for _, n := range []int{importChunk - 2, 10} {
		job := &importJob{req: contactsRequest(app.ID, "sc", 0), now: time.Now(), id: domain.NewV7()}
		job.res = &domain.ImportResult{ImportID: job.id}
		for i := range n {
			input := fmt.Sprintf(`{"phone_number":"x%d"}`, i)
			job.res.Skipped = append(job.res.Skipped, domain.SkippedContact{Position: i, Input: json.RawMessage(input), Reason: "invalid phone"})
			want[fmt.Sprint(job.id, "/", i)] = input
		}
		job.allInvalid = true
		jobs = append(jobs, job)
	}
	var rec *recordingQuerier
	if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		rec = &recordingQuerier{Querier: sqldb.SQLShared(tx)}
		return recordImports(ctx, rec, jobs)
	}); err != nil {
		t.Fatal(err)
	}
	wantExecs := []string{insertImportsSQL[2], insertSkippedSQL[importChunk], insertSkippedSQL[8]}
	if !slices.Equal(rec.execs, wantExecs) {
		t.Errorf("ran %q, want %q", rec.execs, wantExecs)
	}
	rows, err := s.read.Query(`SELECT import_id, position, input, reason FROM skipped_contacts`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[string]string{}
	for rows.Next() {
		var id, input, reason string
		var pos int
		if err := rows.Scan(&id, &pos, &input, &reason); err != nil {
			t.Fatal(err)
		}
		if reason != "invalid phone" {
			t.Errorf("reason %q", reason)
		}
		got[fmt.Sprint(id, "/", pos)] = input
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("skipped contacts stored %v, want %v", got, want)
	}
}
