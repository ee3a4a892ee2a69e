package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// ---- imports ----

// Import stores the request's valid contacts in one durable commit and
// returns them with their new contact_ids. Contacts whose phone is already
// pending for the scenario (when duplicates are not allowed) are skipped.
// It fails with errAllInvalid when nothing is left to add (the import and
// its reasons are still recorded), errQueueFull when the application would
// have more than req.MaxQueued unfinished contacts, and errWalletEmpty when
// a prepaid wallet cannot pay one call per added contact (for these two
// nothing is recorded). It runs in the one writer's group commit with the
// imports queued beside it (importBatch), its statements those prepared
// when the store opened (writeStmts).
func (s *SQLite) Import(ctx context.Context, req domain.ImportRequest, now time.Time) (*domain.ImportResult, error) {
	// The id is made here, on the request's goroutine: the writer is the
	// one every import waits for. Time-ordered, it adds to the end of the
	// imports' key, one page a commit, not a random page an import.
	job := &importJob{req: req, now: now, id: domain.NewV7()}
	counted := s.known >= countedVersion
	alone := func(tx sqldb.SQLQueryer) error {
		return importTx(ctx, sqldb.SQLShared(tx), job, counted)
	}
	err := s.write1(ctx, writeJob{fn: alone, imp: job, result: make(chan error, 1), dataOnly: true})
	return imported(s.metrics.imports, job.res, job.allInvalid, err)
}

// importJob is one import in the writer: the request, and what became of
// it once written.
type importJob struct {
	req domain.ImportRequest
	now time.Time
	id  string
	// res and allInvalid are set in the writer, read once it answered.
	res        *domain.ImportResult
	allInvalid bool // nothing was added
}

// importTx is an import's work alone in SQLite's writer, inside its own
// savepoint (PostgreSQL pipelines its own: postgres_import.go). count: the
// import keeps the counts of new contacts itself (countAdded), where no
// trigger does (a database from before countedVersion has them).
func importTx(ctx context.Context, tx sqldb.Querier, job *importJob, count bool) error {
	// The contacts' key to their scenario is checked only at the commit
	// (schema.sql's migration 17), where it would fail every import of
	// the group: a scenario deleted since the request was checked is this
	// import's error alone.
	var one int
	if err := tx.QueryRow(ctx, scenarioExistsSQL, job.req.AppID, job.req.ScenarioID).Scan(&one); errors.Is(err, sql.ErrNoRows) {
		return domain.ErrNotFound
	} else if err != nil {
		return err
	}
	jobs := []*importJob{job}
	dups, err := insertContacts(ctx, tx, jobs)
	if err != nil {
		return err
	}
	job.sort(dups)
	req, added := job.req, len(job.res.Added)
	queued := int64(-1) // not read yet
	if count && added > 0 {
		if queued, err = countAdded(ctx, tx, req, added); err != nil {
			return err
		}
	}
	if added > 0 {
		if err := checkQueued(ctx, tx, req.AppID, req.MaxQueued, added, queued); err != nil {
			return err
		}
		// A failure here undoes the inserts with the rest of the job.
		if err := checkBalance(ctx, tx, req.AppID, added); err != nil {
			return err
		}
	}
	// With nothing inserted, the import and its reasons are still
	// recorded for the admin API.
	return recordImports(ctx, tx, jobs)
}

// sort makes the job's result from the ids of the contacts not inserted.
func (job *importJob) sort(dups map[string]bool) {
	res := &domain.ImportResult{ImportID: job.id, Skipped: append([]domain.SkippedContact(nil), job.req.Skipped...)}
	addInserted(job.req, res, func(id string) bool { return !dups[id] })
	job.res, job.allInvalid = res, len(res.Added) == 0
}

// addInserted sorts the request's contacts into res: added if their id
// was inserted, else skipped as a phone already queued.
func addInserted(req domain.ImportRequest, res *domain.ImportResult, inserted func(id string) bool) {
	res.Added = slices.Grow(res.Added[:0], len(req.Contacts))
	for _, c := range req.Contacts {
		if !inserted(c.ID) {
			input, _ := domain.MarshalJSON(c.Input)
			res.Skipped = append(res.Skipped, domain.SkippedContact{Position: c.Position, Input: input, Reason: duplicateReason})
			continue
		}
		res.Added = append(res.Added, domain.AddedContact{ID: c.ID, Echo: c.Echo})
	}
}

// imported is Import's answer once its writer has committed (or not),
// counted into m.
func imported(m importMetrics, res *domain.ImportResult, allInvalid bool, err error) (*domain.ImportResult, error) {
	if err != nil {
		return nil, err
	}
	m.observe(len(res.Added), len(res.Skipped))
	if allInvalid {
		return res, domain.ErrAllInvalid
	}
	return res, nil
}

// importsAt is how many of the jobs from the batch's start are imports
// importBatch can run together: none on a database whose imports are
// counted by triggers (before countedVersion).
func (s *SQLite) importsAt(batch []writeJob) int {
	if s.known < countedVersion {
		return 0
	}
	n := 0
	for n < len(batch) && batch[n].imp != nil {
		n++
	}
	return n
}

// importBatch runs imports queued side by side in the writer's
// transaction together. An import that nothing can make fail (its
// scenario is there, and the queue bound and a prepaid wallet hold even
// if every one of its contacts is added, whatever became of those before
// it) needs no savepoint: it is written with the others, their contacts,
// counts and import rows each in a few multi-row statements, and the
// bound and the wallet are read once per application. An import that may
// fail runs alone in its savepoint (its fn), after those before it are
// written, so each sees the ones queued before it as it would one by one.
// results are the jobs' own; err means a statement failed and the
// transaction with it.
func (s *SQLite) importBatch(tx *sql.Tx, jobs []writeJob, results []error) error {
	ctx := context.Background()
	b := batchImports{q: sqldb.SQLShared(preparedTx{tx, &s.stmts}), rooms: map[int64]*importRoom{}, scenarios: map[scenarioKey]bool{}}
	for i, job := range jobs {
		if b.fits(ctx, job.imp) {
			continue
		}
		if err := b.write(ctx); err != nil {
			return err
		}
		if _, err := s.runJobs(tx, jobs[i:i+1], results[i:i+1]); err != nil {
			return err
		}
		delete(b.rooms, job.imp.req.AppID) // its count may have changed
	}
	return b.write(ctx)
}

// batchImports are the imports of a batch taken in (fits) and not yet
// written, with what they were checked against.
type batchImports struct {
	q         sqldb.Querier
	jobs      []*importJob
	rooms     map[int64]*importRoom
	scenarios map[scenarioKey]bool // whether it exists
}

type scenarioKey struct {
	app int64
	id  string
}

// importRoom is what an application's imports are checked against.
type importRoom struct {
	// queued is the application's unfinished contacts, the imports taken
	// in counted as if all their contacts were added.
	queued int64
	wallet domain.Wallet
}

// fits takes job in when nothing of it can fail, and tells whether it did.
// A read that fails leaves the job to run alone, which meets the error
// there.
func (b *batchImports) fits(ctx context.Context, job *importJob) bool {
	req := job.req
	room := b.rooms[req.AppID]
	if room == nil {
		room = &importRoom{}
		if err := b.q.QueryRow(ctx, queuedSQL, req.AppID).Scan(&room.queued); err != nil {
			return false
		}
		w, err := scanWallet(b.q.QueryRow(ctx, walletQuery, req.AppID))
		if err != nil {
			return false
		}
		room.wallet = w
		b.rooms[req.AppID] = room
	}
	key := scenarioKey{req.AppID, req.ScenarioID}
	exists, seen := b.scenarios[key]
	if !seen {
		var one int
		exists = b.q.QueryRow(ctx, scenarioExistsSQL, req.AppID, req.ScenarioID).Scan(&one) == nil
		b.scenarios[key] = exists
	}
	if !exists {
		return false // alone, importTx answers it not found
	}
	// checkQueued and checkBalance, for the most contacts it may add.
	if n := int64(len(req.Contacts)); n > 0 {
		if req.MaxQueued > 0 && room.queued+n > req.MaxQueued {
			return false
		}
		if room.wallet.Prepaid && room.wallet.Balance < n*room.wallet.PricePerCall {
			return false
		}
		room.queued += n
	}
	b.jobs = append(b.jobs, job)
	return true
}

// write stores the imports taken in: their contacts, the counts of those
// added (once per application and per scenario and campaign), their
// import rows and skipped contacts.
func (b *batchImports) write(ctx context.Context) error {
	if len(b.jobs) == 0 {
		return nil
	}
	jobs := b.jobs
	b.jobs = nil
	dups, err := insertContacts(ctx, b.q, jobs)
	if err != nil {
		return err
	}
	var (
		apps   []int64
		byApp  = map[int64]int{}
		counts []countKey
		byKey  = map[countKey]int{}
	)
	for _, job := range jobs {
		job.sort(dups)
		added := len(job.res.Added)
		if added == 0 {
			continue
		}
		req := job.req
		if _, ok := byApp[req.AppID]; !ok {
			apps = append(apps, req.AppID)
		}
		byApp[req.AppID] += added
		k := countKey{req.AppID, req.ScenarioID, req.CampaignID}
		if _, ok := byKey[k]; !ok {
			counts = append(counts, k)
		}
		byKey[k] += added
	}
	for _, app := range apps {
		var queued int64
		if err := b.q.QueryRow(ctx, countQueuedSQL, byApp[app], app).Scan(&queued); err != nil {
			return err
		}
		if room := b.rooms[app]; room != nil {
			room.queued = queued // exact again: repeats were counted in full
		}
	}
	for _, k := range counts {
		if _, err := b.q.Exec(ctx, countContactsSQL, k.app, k.scenario, k.campaign, byKey[k]); err != nil {
			return err
		}
	}
	return recordImports(ctx, b.q, jobs)
}

// countKey is a row of contact_counts new contacts go to.
type countKey struct {
	app                int64
	scenario, campaign string
}

// insertContacts adds the jobs' contacts in multi-row statements of up to
// contactChunk rows, prepared once, and returns the ids of those the
// pending-phone index kept out (duplicates; none where scenarios allow
// repeated phones). Nothing is read back unless a statement stored fewer
// rows than it was given: RETURNING cost the writer more than a quarter
// of its CPU per contact (docs/benchmarks.md#the-writers-cpu-per-contact).
// A job of jobChunkMin contacts or more is written on its own, the values
// its rows share bound once a statement; smaller ones share statements.
func insertContacts(ctx context.Context, tx sqldb.Querier, jobs []*importJob) (dups map[string]bool, err error) {
	w := contactWriter{q: tx}
	for _, job := range jobs {
		req := job.req
		// The values every row of a job shares are boxed once: this loop
		// runs in the writer, which every import waits for.
		var (
			at       any = Millis(job.now)
			uniq     any = boolInt(req.UniquePhone)
			camp         = nullString(req.CampaignID)
			appID    any = req.AppID
			scenario any = req.ScenarioID
			importID any = job.id
		)
		if len(req.Contacts) >= jobChunkMin {
			if err := w.flush(ctx); err != nil {
				return nil, err
			}
			for start := 0; start < len(req.Contacts); start += contactChunk {
				chunk := req.Contacts[start:min(start+contactChunk, len(req.Contacts))]
				w.args = append(w.args[:0], appID, scenario, camp, importID, uniq, at, at, at)
				for _, c := range chunk {
					w.args = append(w.args, c.ID, c.Phone, c.Fields)
					w.ids = append(w.ids, c.ID)
				}
				if err := w.run(ctx, insertJobContactsSQL[len(chunk)]); err != nil {
					return nil, err
				}
			}
			continue
		}
		for _, c := range req.Contacts {
			w.args = append(w.args, c.ID, appID, scenario, camp, importID, c.Phone, c.Fields, uniq, at, at, at)
			if w.ids = append(w.ids, c.ID); len(w.ids) == contactChunk {
				if err := w.flush(ctx); err != nil {
					return nil, err
				}
			}
		}
	}
	if err := w.flush(ctx); err != nil {
		return nil, err
	}
	return w.dups, nil
}

// contactWriter runs insertContacts' statements: args and ids are those
// of the rows gathered for the next one.
type contactWriter struct {
	q    sqldb.Querier
	args []any
	ids  []string
	dups map[string]bool
}

// flush inserts the rows gathered from jobs that share a statement.
func (w *contactWriter) flush(ctx context.Context) error {
	if len(w.ids) == 0 {
		return nil
	}
	return w.run(ctx, insertContactsSQL[len(w.ids)])
}

// run inserts the rows gathered with query and, when fewer went in,
// reads which did.
func (w *contactWriter) run(ctx context.Context, query string) error {
	defer func() { w.args, w.ids = w.args[:0], w.ids[:0] }()
	stored, err := w.q.Exec(ctx, query, w.args...)
	if err != nil || int(stored) == len(w.ids) {
		return err
	}
	return w.refused(ctx)
}

// refused adds the gathered rows that were not stored to dups: a
// contact's id is new, so it is there only if its row went in now.
func (w *contactWriter) refused(ctx context.Context) error {
	args := make([]any, len(w.ids))
	for i, id := range w.ids {
		args[i] = id
	}
	in := make(map[string]bool, len(w.ids))
	var id string
	err := w.q.Query(ctx, `SELECT id FROM contacts WHERE id IN (`+strings.TrimSuffix(strings.Repeat("?, ", len(w.ids)), ", ")+`)`, args,
		func(scan func(...any) error) error {
			if err := scan(&id); err != nil {
				return err
			}
			in[id] = true
			return nil
		})
	if err != nil {
		return err
	}
	for _, id := range w.ids {
		if !in[id] {
			if w.dups == nil {
				w.dups = map[string]bool{}
			}
			w.dups[id] = true
		}
	}
	return nil
}

// contactChunk rows per INSERT: large enough to amortise the statement,
// small enough to stay far below SQLite's parameter limit. jobChunkMin
// contacts make a job worth statements of its own: its rows' shared
// values bound once save more than a statement costs.
const (
	contactChunk = 50
	jobChunkMin  = 16
)

// insertContactsInto names the columns an import fills.
const insertContactsInto = `INSERT OR FAIL INTO contacts
	(id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)`

// insertContactsSQL[n] inserts n contacts of any jobs, all their values
// bound row by row; insertJobContactsSQL[n] n contacts of one job, the
// values they share (application, scenario, campaign, import,
// unique_phone and three times the time) bound first and once. Both keep
// out, without an error, a contact whose phone is pending already where
// its scenario forbids repeats (contacts_pending_phone). ("WHERE true"
// tells SQLite's parser the ON CONFLICT is the upsert's, not a join's.)
// OR FAIL, with the deferred key to the scenario (schema.sql's migration
// 17), leaves SQLite nothing to undo halfway through a statement, so it
// keeps no statement journal: no NULL is ever bound, and a statement that
// failed all the same fails the job or the group it is in, whose
// savepoint or transaction is rolled back whole. Imports need every chunk
// size.
var insertContactsSQL, insertJobContactsSQL = func() (rows, job [contactChunk + 1]string) {
	for n := 1; n <= contactChunk; n++ {
		rows[n] = insertContactsInto + `
	VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ") + `
	ON CONFLICT DO NOTHING`
		job[n] = insertContactsInto + `
	SELECT column1, ?, ?, ?, ?, column2, column3, ?, ?, ?, ?
	FROM (VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?, ?), ", n), ", ") + `) WHERE true
	ON CONFLICT DO NOTHING`
	}
	return rows, job
}()

// importChunk import rows per INSERT: a batch's imports are written
// together (importBatch).
const importChunk = 32

// insertImportsSQL[n] inserts n import rows; a batch needs every size.
var insertImportsSQL = func() (q [importChunk + 1]string) {
	for n := 1; n <= importChunk; n++ {
		q[n] = `INSERT INTO imports (id, app_id, scenario_id, campaign_id, requested, added, skipped, code, created_at)
	VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ")
	}
	return q
}()

// insertSkippedSQL[n] inserts n skipped contacts; a batch needs every size.
var insertSkippedSQL = func() (q [importChunk + 1]string) {
	for n := 1; n <= importChunk; n++ {
		q[n] = `INSERT INTO skipped_contacts (import_id, position, input, reason)
	VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", n), ", ")
	}
	return q
}()

// countedVersion is the SQLite migration from which imports count the
// contacts they add (schema.sql's migration 14) instead of row triggers.
const countedVersion = 14

// countAdded adds an import's n new contacts, all queued and without an
// outcome, to the application's unfinished contacts and to the console's
// counts: two statements per import where row triggers made two per
// contact (schema.sql's migration 14). It returns the application's
// unfinished contacts now, which checkQueued needs.
func countAdded(ctx context.Context, tx sqldb.Querier, req domain.ImportRequest, n int) (queued int64, err error) {
	if err := tx.QueryRow(ctx, countQueuedSQL, n, req.AppID).Scan(&queued); err != nil {
		return 0, err
	}
	_, err = tx.Exec(ctx, countContactsSQL, req.AppID, req.ScenarioID, req.CampaignID, n)
	return queued, err
}

const (
	countQueuedSQL   = `UPDATE queued_contacts SET n = n + ? WHERE app_id = ? RETURNING n`
	countContactsSQL = `INSERT INTO contact_counts (app_id, scenario_id, campaign_id, state, outcome, n)
		VALUES (?, ?, ?, 'queued', '', ?) ON CONFLICT DO UPDATE SET n = n + excluded.n`
	queuedSQL         = `SELECT n FROM queued_contacts WHERE app_id = ?`
	scenarioExistsSQL = `SELECT 1 FROM scenarios WHERE app_id = ? AND id = ?`
)

// checkQueued fails with errQueueFull when the added contacts took the
// application over max unfinished contacts. The count, n when the import
// kept it (countAdded), else read here (kept by row triggers on a database
// from before countedVersion), already includes them; read in the one
// writer's transaction, it is exact even under concurrent imports.
func checkQueued(ctx context.Context, tx sqldb.Querier, appID, max int64, added int, n int64) error {
	if max <= 0 {
		return nil
	}
	if n < 0 {
		if err := tx.QueryRow(ctx, queuedSQL, appID).Scan(&n); err != nil {
			return err
		}
	}
	if n > max {
		return domain.ErrQueueFull(n-int64(added), max, added)
	}
	return nil
}

// checkBalance fails with errWalletEmpty when a prepaid wallet cannot pay
// the minimum charge of n calls.
func checkBalance(ctx context.Context, tx sqldb.Querier, appID int64, n int) error {
	w, err := scanWallet(tx.QueryRow(ctx, walletQuery, appID))
	if err != nil {
		return err
	}
	if w.Prepaid && w.Balance < int64(n)*w.PricePerCall {
		return domain.ErrWalletEmpty
	}
	return nil
}

// The code an import row records: 1 when contacts were added, else the
// public API's code for "all contacts invalid", as the admin API shows it.
const (
	importAdded      = 1
	importAllInvalid = 1403
)

// recordImports writes the jobs' import rows and their skipped contacts,
// in multi-row statements of importChunk rows prepared once.
func recordImports(ctx context.Context, tx sqldb.Querier, jobs []*importJob) error {
	args := make([]any, 0, min(len(jobs), importChunk)*9)
	for start := 0; start < len(jobs); start += importChunk {
		chunk := jobs[start:min(start+importChunk, len(jobs))]
		args = args[:0]
		for _, job := range chunk {
			req, res := job.req, job.res
			code := importAdded
			if job.allInvalid {
				code = importAllInvalid
			}
			args = append(args, job.id, req.AppID, req.ScenarioID, nullString(req.CampaignID),
				len(req.Contacts)+len(req.Skipped), len(res.Added), len(res.Skipped), code, Millis(job.now))
		}
		if _, err := tx.Exec(ctx, insertImportsSQL[len(chunk)], args...); err != nil {
			return err
		}
	}
	// The skipped contacts of all the jobs, importChunk to a statement:
	// one statement a row was most of the writer's time for imports of
	// phones pending already (docs/benchmarks.md#the-writers-cpu-per-contact).
	args, rows := args[:0], 0
	for _, job := range jobs {
		for _, sk := range job.res.Skipped {
			args = append(args, job.id, sk.Position, string(sk.Input), sk.Reason)
			if rows++; rows == importChunk {
				if _, err := tx.Exec(ctx, insertSkippedSQL[rows], args...); err != nil {
					return err
				}
				args, rows = args[:0], 0
			}
		}
	}
	if rows > 0 {
		_, err := tx.Exec(ctx, insertSkippedSQL[rows], args...)
		return err
	}
	return nil
}

// SkippedOf returns an import's skipped contacts with their reasons.
func (s *sqlStore) SkippedOf(ctx context.Context, importID string) ([]domain.SkippedContact, error) {
	return sqldb.Collect(ctx, s.db, scanSkipped,
		`SELECT position, input, reason FROM skipped_contacts WHERE import_id = ? ORDER BY position`, importID)
}

func scanSkipped(row sqldb.Row) (domain.SkippedContact, error) {
	var sk domain.SkippedContact
	var input string
	err := row.Scan(&sk.Position, &input, &sk.Reason)
	sk.Input = json.RawMessage(input)
	return sk, err
}
