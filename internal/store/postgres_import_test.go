package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"dialbox/internal/domain"
)

// pgImportOf is an import of these phones into scenario sc.
func pgImportOf(appID int64, unique bool, maxQueued int64, list ...string) domain.ImportRequest {
	req := domain.ImportRequest{AppID: appID, ScenarioID: "sc", UniquePhone: unique, MaxQueued: maxQueued}
	for i, p := range list {
		fields, _ := json.Marshal(map[string]string{"ho_ten": fmt.Sprint("C", i)})
		req.Contacts = append(req.Contacts, domain.NewContact{Position: i, Input: map[string]any{"so_dien_thoai": p},
			ID: domain.NewV7(), Fields: fields, Phone: p})
	}
	return req
}

// One pipelined batch whose imports fail in its middle, refused (the
// queue's bound) and in error (an unknown scenario): each answers alone,
// the others commit, with their duplicates and skipped contacts recorded
// (docs/postgres.md#imports).
func TestPostgresPipelinedImportsFailAlone(t *testing.T) {
	nodes, appID := pgNodes(t, 1)
	s := nodes[0]
	unknown := pgImportOf(appID, true, 0, "+84913000009")
	unknown.ScenarioID = "nope"
	withSkip := pgImportOf(appID, true, 0, "+84913000004")
	withSkip.Skipped = []domain.SkippedContact{{Position: 1, Input: json.RawMessage(`"x"`), Reason: "bad phone"}}
	reqs := []domain.ImportRequest{
		pgImportOf(appID, true, 0, "+84913000001", "+84913000002"),
		pgImportOf(appID, true, 0, "+84913000001", "+84913000003"), // one duplicate
		pgImportOf(appID, true, 3, "+84913000005", "+84913000006"), // 3 queued already: refused
		unknown,
		withSkip,
		pgImportOf(appID, true, 0, "+84913000001"), // only a duplicate: all invalid
	}
	var batch []*pgImport
	for _, r := range reqs {
		batch = append(batch, newPgImport(r, time.Now()))
	}
	s.commitImports(batch)
	errs := make([]error, len(batch))
	for i, job := range batch {
		errs[i] = <-job.result
	}
	if errs[0] != nil || errs[1] != nil || errs[4] != nil || errs[5] != nil {
		t.Fatalf("the imports that fit failed: %v", errs)
	}
	if !reflect.DeepEqual(errs[2], error(domain.ErrQueueFull(3, 3, 2))) {
		t.Errorf("over the bound: %v, want the queue full", errs[2])
	}
	if errs[3] == nil {
		t.Error("an import into an unknown scenario was stored")
	}
	wantAdded := []int{2, 1, 0, 0, 1, 0}
	for i, job := range batch {
		if i == 2 || i == 3 {
			if n := pgCount(t, s, `SELECT count(*) FROM imports WHERE id = $1`, job.res.ImportID); n != 0 {
				t.Errorf("import %d failed but its row is stored", i)
			}
			continue
		}
		if got := len(job.res.Added); got != wantAdded[i] {
			t.Errorf("import %d added %d, want %d", i, got, wantAdded[i])
		}
		var added, skipped, code int
		if err := s.pool.QueryRow(context.Background(), `SELECT added, skipped, code FROM imports WHERE id = $1`,
			job.res.ImportID).Scan(&added, &skipped, &code); err != nil {
			t.Fatalf("import %d: %v", i, err)
		}
		if added != wantAdded[i] || skipped != len(job.res.Skipped) {
			t.Errorf("import %d's row: %d added, %d skipped; answered %d, %d", i, added, skipped, len(job.res.Added), len(job.res.Skipped))
		}
		if stored := pgCount(t, s, `SELECT count(*) FROM skipped_contacts WHERE import_id = $1`, job.res.ImportID); stored != len(job.res.Skipped) {
			t.Errorf("import %d: %d skipped contacts stored, %d answered", i, stored, len(job.res.Skipped))
		}
		if wantCode := map[bool]int{true: importAdded, false: importAllInvalid}[wantAdded[i] > 0]; code != wantCode {
			t.Errorf("import %d's code %d, want %d", i, code, wantCode)
		}
	}
	if !batch[5].allInvalid || batch[0].allInvalid {
		t.Error("all invalid is not what was added")
	}
	if got := batch[1].res.Skipped; len(got) != 1 || got[0].Reason != duplicateReason || got[0].Position != 0 {
		t.Errorf("the duplicate's skip: %+v", got)
	}
	if n := pgCount(t, s, `SELECT count(*) FROM contacts`); n != 4 {
		t.Errorf("%d contacts stored, want 4", n)
	}
	if n := pgCount(t, s, `SELECT n FROM queued_contacts WHERE app_id = $1`, appID); n != 4 {
		t.Errorf("%d unfinished contacts counted, want 4", n)
	}
}

// A batch that fits its room goes in without savepoints; when one of its
// statements fails (an unknown scenario) the batch runs again, each
// import in its savepoint, so that one fails alone and the others commit,
// counted once (docs/postgres.md#imports).
func TestPostgresFittingBatchFailsAlone(t *testing.T) {
	nodes, appID := pgNodes(t, 1)
	s := nodes[0]
	unknown := pgImportOf(appID, true, 0, "+84913000009")
	unknown.ScenarioID = "nope"
	reqs := []domain.ImportRequest{
		pgImportOf(appID, true, 10, "+84913000001", "+84913000002"),
		unknown,
		pgImportOf(appID, true, 10, "+84913000001", "+84913000003"), // one duplicate
	}
	var batch []*pgImport
	for _, r := range reqs {
		batch = append(batch, newPgImport(r, time.Now()))
	}
	tx, err := s.pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fits, err := importsFit(context.Background(), tx, batch)
	tx.Rollback(context.Background())
	if err != nil || !fits {
		t.Fatalf("the batch fits its room: %v, %v", fits, err)
	}
	s.commitImports(batch)
	errs := make([]error, len(batch))
	for i, job := range batch {
		errs[i] = <-job.result
	}
	if errs[0] != nil || errs[2] != nil || errs[1] == nil {
		t.Fatalf("answers %v: want only the unknown scenario's to fail", errs)
	}
	if len(batch[0].res.Added) != 2 || len(batch[2].res.Added) != 1 || len(batch[2].res.Skipped) != 1 {
		t.Errorf("added %d and %d (skipped %d), want 2 and 1 (1)", len(batch[0].res.Added), len(batch[2].res.Added), len(batch[2].res.Skipped))
	}
	if n := pgCount(t, s, `SELECT count(*) FROM contacts`); n != 3 {
		t.Errorf("%d contacts stored, want 3", n)
	}
	if n := pgCount(t, s, `SELECT n FROM queued_contacts WHERE app_id = $1`, appID); n != 3 {
		t.Errorf("%d unfinished contacts counted, want 3", n)
	}
	if n := pgCount(t, s, `SELECT count(*) FROM imports`); n != 2 {
		t.Errorf("%d import rows, want 2", n)
	}
}

// importsFit's rule is readImport's with every contact added: the bound
// counts the imports before in the batch, a prepaid wallet must pay for
// the import's own contacts.
func TestPgRoomTake(t *testing.T) {
	imp := func(maxQueued int64, n int) domain.ImportRequest {
		return domain.ImportRequest{MaxQueued: maxQueued, Contacts: make([]domain.NewContact, n)}
	}
	r := pgRoom{queued: 5}
	if !r.take(imp(8, 3)) || r.take(imp(8, 1)) {
		t.Error("the bound: 5 queued + 3 fit 8, one more does not")
	}
	if r := (pgRoom{queued: 100}); !r.take(imp(0, 50)) {
		t.Error("no bound: everything fits")
	}
	w := pgRoom{prepaid: true, balance: 1000, price: 100}
	if !w.take(imp(0, 10)) || w.take(imp(0, 11)) {
		t.Error("a prepaid wallet of 1000 pays for 10 calls at 100, not 11")
	}
	if p := (pgRoom{balance: 0, price: 100}); !p.take(imp(0, 10)) {
		t.Error("a postpaid wallet always fits")
	}
}

// A batch that fits is stored in one statement, and stores what the
// imports one by one would: each import's row counted from its own
// contacts, its skipped contacts (refused by the request, or a phone
// queued already, an earlier import's of the batch included), every
// contact in the order given, and no campaign where none was named.
func TestPostgresFittingBatchStoresWhatEachWould(t *testing.T) {
	nodes, appID := pgNodes(t, 1)
	s := nodes[0]
	first := pgImportOf(appID, true, 0, "+84913000001", "+84913000002")
	first.Skipped = []domain.SkippedContact{{Position: 2, Input: json.RawMessage(`"x"`), Reason: "bad phone"}}
	reqs := []domain.ImportRequest{
		first,
		pgImportOf(appID, true, 0, "+84913000003", "+84913000001"),  // its second repeats the first import's
		pgImportOf(appID, true, 0, "+84913000002"),                  // nothing new: all invalid
		pgImportOf(appID, false, 0, "+84913000001", "+84913000001"), // repeats allowed
	}
	var batch []*pgImport
	for _, r := range reqs {
		batch = append(batch, newPgImport(r, time.Now()))
	}
	ctx := context.Background()
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fits, err := importsFit(ctx, tx, batch)
	tx.Rollback(ctx)
	if err != nil || !fits {
		t.Fatalf("the batch fits its room: %v, %v", fits, err)
	}
	s.commitImports(batch)
	for i, job := range batch {
		if err := <-job.result; err != nil {
			t.Fatalf("import %d: %v", i, err)
		}
	}
	wantAdded, wantSkipped := []int{2, 1, 0, 2}, []int{1, 1, 1, 0}
	for i, job := range batch {
		if len(job.res.Added) != wantAdded[i] || len(job.res.Skipped) != wantSkipped[i] {
			t.Errorf("import %d answered %d added, %d skipped; want %d, %d", i, len(job.res.Added), len(job.res.Skipped), wantAdded[i], wantSkipped[i])
		}
		var added, skipped, code int
		if err := s.pool.QueryRow(ctx, `SELECT added, skipped, code FROM imports WHERE id = $1`, job.res.ImportID).Scan(&added, &skipped, &code); err != nil {
			t.Fatalf("import %d: %v", i, err)
		}
		wantCode := map[bool]int{true: importAdded, false: importAllInvalid}[wantAdded[i] > 0]
		if added != wantAdded[i] || skipped != wantSkipped[i] || code != wantCode {
			t.Errorf("import %d's row: %d added, %d skipped, code %d", i, added, skipped, code)
		}
		if n := pgCount(t, s, `SELECT count(*) FROM skipped_contacts WHERE import_id = $1`, job.res.ImportID); n != wantSkipped[i] {
			t.Errorf("import %d: %d skipped contacts stored", i, n)
		}
	}
	if got := batch[1].res.Skipped; len(got) != 1 || got[0].Position != 1 || got[0].Reason != duplicateReason {
		t.Errorf("the repeated phone's skip: %+v", got)
	}
	if !batch[2].allInvalid || batch[0].allInvalid {
		t.Error("all invalid is not what was added")
	}
	var ids []string
	for _, job := range batch {
		for _, c := range job.res.Added {
			ids = append(ids, c.ID)
		}
	}
	if stored := pgStrings(t, s, `SELECT id FROM contacts WHERE campaign_id IS NULL ORDER BY seq`); !reflect.DeepEqual(stored, ids) {
		t.Errorf("contacts stored in the order %v, added %v", stored, ids)
	}
	if n := pgCount(t, s, `SELECT n FROM queued_contacts WHERE app_id = $1`, appID); n != 5 {
		t.Errorf("%d unfinished contacts counted, want 5", n)
	}
	order := pgStrings(t, s, `SELECT id FROM imports ORDER BY seq`)
	for i, job := range batch {
		if i >= len(order) || order[i] != job.res.ImportID {
			t.Errorf("imports numbered in the order %v", order)
			break
		}
	}
}
