package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"dialbox/internal/domain"

	"github.com/jackc/pgx/v5"
)

// Imports on PostgreSQL: a writer's batch that fits its applications'
// room is one statement; any other is sent as one pipeline, not a round
// trip per statement, each import a savepoint, one statement that stores
// all of it and one that reads the room it leaves. The writer reads the
// answers in order, and an import that fails (a refusal or an error) is
// undone alone and the imports after it sent again
// (docs/postgres.md#imports).

// pgImport is one import waiting for its writer's next commit; the writer
// sets res and allInvalid before it answers.
type pgImport struct {
	req        domain.ImportRequest
	at         int64
	cols       pgImportColumns
	res        *domain.ImportResult
	allInvalid bool
	result     chan error
}

// pgImportColumns are an import's contacts and skipped contacts as the
// columns its statements send, prepared by the request's goroutine so
// its writer only sends them. A skipped row's id is its contact's when it
// stands for one the pending-phone index may keep out, else empty.
type pgImportColumns struct {
	ids, phones, fields              []string
	skipPositions                    []int32
	skipInputs, skipReasons, skipIDs []string
}

// importSQL stores an import in one statement: its contacts (RETURNING
// those the pending-phone index let in), its row, counted from them, and
// its skipped contacts: those the request refused, and those of its
// contacts that were not inserted (a phone already queued). Its code is
// importAdded or importAllInvalid.
const importSQL = `WITH ins AS (
	INSERT INTO contacts
		(id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
	SELECT u.id, $1, $2, $3, $4, u.phone, u.fields, $5, $6, $6, $6
	FROM unnest($7::text[], $8::text[], $9::text[]) WITH ORDINALITY AS u(id, phone, fields, n)
	ORDER BY u.n
	ON CONFLICT DO NOTHING RETURNING id
), added AS (SELECT count(*) AS n FROM ins),
imp AS (
	INSERT INTO imports (id, app_id, scenario_id, campaign_id, requested, added, skipped, code, created_at)
	SELECT $4, $1, $2, $3, $10::int, a.n, $10::int - a.n, CASE WHEN a.n > 0 THEN 1 ELSE 1403 END, $6 FROM added a
), sk AS (
	INSERT INTO skipped_contacts (import_id, position, input, reason)
	SELECT $4, s.position, s.input, s.reason
	FROM unnest($11::int[], $12::text[], $13::text[], $14::text[]) AS s(position, input, reason, id)
	WHERE s.id = '' OR NOT EXISTS (SELECT 1 FROM ins WHERE ins.id = s.id)
)
SELECT id FROM ins`

// importsSQL is importSQL for a batch of imports that all fit their room:
// every import's contacts, rows and skipped contacts in one statement,
// each column an array over the batch (batchArgs), so the statement's
// planning, its triggers and its round trip are paid once a batch, not
// once an import. Its answer is the ids of the contacts inserted.
const importsSQL = `WITH ins AS (
	INSERT INTO contacts
		(id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
	SELECT u.id, u.app_id, u.scenario_id, nullif(u.campaign_id, ''), u.import_id, u.phone, u.fields, u.unique_phone, u.at, u.at, u.at
	FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::bigint[])
		WITH ORDINALITY AS u(id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone, at, n)
	ORDER BY u.n
	ON CONFLICT DO NOTHING RETURNING id, import_id
), added AS (SELECT import_id, count(*) AS n FROM ins GROUP BY import_id),
imp AS (
	INSERT INTO imports (id, app_id, scenario_id, campaign_id, requested, added, skipped, code, created_at)
	SELECT i.id, i.app_id, i.scenario_id, nullif(i.campaign_id, ''), i.requested, coalesce(a.n, 0), i.requested - coalesce(a.n, 0),
		CASE WHEN coalesce(a.n, 0) > 0 THEN 1 ELSE 1403 END, i.at
	FROM unnest($10::text[], $11::bigint[], $12::text[], $13::text[], $14::int[], $15::bigint[])
		WITH ORDINALITY AS i(id, app_id, scenario_id, campaign_id, requested, at, n)
	LEFT JOIN added a ON a.import_id = i.id
	ORDER BY i.n
), sk AS (
	INSERT INTO skipped_contacts (import_id, position, input, reason)
	SELECT s.import_id, s.position, s.input, s.reason
	FROM unnest($16::text[], $17::int[], $18::text[], $19::text[], $20::text[]) AS s(import_id, position, input, reason, id)
	WHERE s.id = '' OR NOT EXISTS (SELECT 1 FROM ins WHERE ins.id = s.id)
)
SELECT id FROM ins`

// args are importSQL's arguments for the import.
func (job *pgImport) args() []any {
	req, c := job.req, job.cols
	return []any{req.AppID, req.ScenarioID, nullString(req.CampaignID), job.res.ImportID, boolInt(req.UniquePhone), job.at,
		c.ids, c.phones, c.fields, len(req.Contacts) + len(req.Skipped), c.skipPositions, c.skipInputs, c.skipReasons, c.skipIDs}
}

// batchArgs are importsSQL's arguments for jobs: each import's columns
// end to end, the values its rows share repeated on each row.
func batchArgs(jobs []*pgImport) []any {
	var (
		apps, ats                             []int64
		scenarios, campaigns, importIDs       []string
		uniques                               []int32
		ids, phones, fields                   []string
		impIDs, impScenarios, impCampaigns    []string
		impApps, impAts                       []int64
		impRequested                          []int32
		skImports, skInputs, skReasons, skIDs []string
		skPositions                           []int32
	)
	for _, job := range jobs {
		req, c, importID := job.req, job.cols, job.res.ImportID
		ids, phones, fields = append(ids, c.ids...), append(phones, c.phones...), append(fields, c.fields...)
		for range c.ids {
			apps, scenarios, campaigns = append(apps, req.AppID), append(scenarios, req.ScenarioID), append(campaigns, req.CampaignID)
			importIDs, uniques, ats = append(importIDs, importID), append(uniques, int32(boolInt(req.UniquePhone))), append(ats, job.at)
		}
		impIDs, impApps, impScenarios, impCampaigns = append(impIDs, importID), append(impApps, req.AppID), append(impScenarios, req.ScenarioID), append(impCampaigns, req.CampaignID)
		impRequested, impAts = append(impRequested, int32(len(req.Contacts)+len(req.Skipped))), append(impAts, job.at)
		for range c.skipPositions {
			skImports = append(skImports, importID)
		}
		skPositions, skInputs = append(skPositions, c.skipPositions...), append(skInputs, c.skipInputs...)
		skReasons, skIDs = append(skReasons, c.skipReasons...), append(skIDs, c.skipIDs...)
	}
	return []any{ids, apps, scenarios, campaigns, importIDs, phones, fields, uniques, ats,
		impIDs, impApps, impScenarios, impCampaigns, impRequested, impAts,
		skImports, skPositions, skInputs, skReasons, skIDs}
}

// roomSQL reads, after an import's statement, the tenant's unfinished
// contacts (its own included) and its wallet.
const roomSQL = `SELECT coalesce((SELECT n FROM queued_contacts WHERE app_id = $1), 0),
	coalesce(w.prepaid <> 0, false), coalesce(w.balance, 0), coalesce(w.price_per_call, 0)
	FROM (SELECT 1) o LEFT JOIN wallets w ON w.app_id = $1`

// duplicateReason is a skipped contact's reason when its phone is already
// queued for the scenario.
const duplicateReason = "phone_number is already queued for this scenario"

// newPgImport prepares an import's columns in the request's goroutine,
// so its writer only sends them.
func newPgImport(req domain.ImportRequest, now time.Time) *pgImport {
	job := &pgImport{req: req, at: Millis(now), result: make(chan error, 1)}
	job.res = &domain.ImportResult{ImportID: domain.NewV7()}
	c := &job.cols
	c.ids = make([]string, len(req.Contacts))
	c.phones = make([]string, len(req.Contacts))
	c.fields = make([]string, len(req.Contacts))
	for i, ct := range req.Contacts {
		c.ids[i], c.phones[i], c.fields[i] = ct.ID, ct.Phone, string(ct.Fields)
	}
	// The skipped rows: the request's, then (only where the pending-phone
	// index can refuse one) every contact, kept if it was not inserted.
	for _, sk := range req.Skipped {
		c.skipPositions, c.skipInputs = append(c.skipPositions, int32(sk.Position)), append(c.skipInputs, string(sk.Input))
		c.skipReasons, c.skipIDs = append(c.skipReasons, sk.Reason), append(c.skipIDs, "")
	}
	if req.UniquePhone {
		for _, ct := range req.Contacts {
			input, _ := domain.MarshalJSON(ct.Input)
			c.skipPositions, c.skipInputs = append(c.skipPositions, int32(ct.Position)), append(c.skipInputs, string(input))
			c.skipReasons, c.skipIDs = append(c.skipReasons, duplicateReason), append(c.skipIDs, ct.ID)
		}
	}
	return job
}

// commitImports runs a writer's batch in one transaction. When the batch
// fits the room its applications have (importsFit), nothing can refuse an
// import, and the batch is one statement (importsSQL) with no savepoint
// and no read of the room after each import. Otherwise, or when that
// statement fails, the imports are pipelined: every one from the first
// not yet answered is sent with a savepoint of its own; the first that fails is
// undone (ROLLBACK TO its savepoint, which undoes those after it too) and
// the ones after it are sent again. It answers each import once the
// transaction is over: acknowledged means committed.
func (s *Postgres) commitImports(batch []*pgImport) {
	start := time.Now()
	defer func() { s.Metrics.commits.observe(len(batch), time.Since(start)) }()
	ctx := context.Background()
	results := make([]error, len(batch))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		fits, err := importsFit(ctx, tx, batch)
		if err != nil {
			return err
		}
		if !fits {
			return importEachAlone(ctx, tx, batch, results)
		}
		return writeFittingImports(ctx, tx, batch)
	})
	if errors.Is(err, errFittingImportFailed) {
		// One import's statement failed (an unknown scenario, say) and
		// took the transaction with it: each runs again in its savepoint,
		// so only that one fails. Nothing was committed.
		clear(results)
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return importEachAlone(ctx, tx, batch, results) })
	}
	answerBatch(&s.storage, err, results, func(i int, err error) { batch[i].result <- err })
}

// importEachAlone sends the imports with a savepoint each, again from the
// one after the first that fails, until every one has its result.
func importEachAlone(ctx context.Context, tx pgx.Tx, batch []*pgImport, results []error) error {
	for from := 0; from < len(batch); {
		failed, err := pipelineImports(ctx, tx, batch[from:], results[from:])
		if err != nil {
			return err
		}
		if failed < 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ROLLBACK TO SAVEPOINT j%d`, failed)); err != nil {
			return err
		}
		from += failed + 1
	}
	return nil
}

// importsFit reads the room of each application of the batch (one round
// trip) and tells whether every import would be let in even if all their
// contacts were added: the queue's bound and a prepaid wallet hold for the
// imports before it and itself. Only this writer adds to an application's
// contacts (imports are given to writers by application), and what
// settles calls meanwhile only makes room.
func importsFit(ctx context.Context, tx pgx.Tx, batch []*pgImport) (bool, error) {
	rooms := map[int64]*pgRoom{}
	var b pgx.Batch
	var order []int64
	for _, job := range batch {
		if rooms[job.req.AppID] == nil {
			rooms[job.req.AppID] = &pgRoom{}
			order = append(order, job.req.AppID)
			b.Queue(roomSQL, job.req.AppID)
		}
	}
	br := tx.SendBatch(ctx, &b)
	for _, app := range order {
		r := rooms[app]
		if err := br.QueryRow().Scan(&r.queued, &r.prepaid, &r.balance, &r.price); err != nil {
			br.Close()
			return false, err
		}
	}
	if err := br.Close(); err != nil {
		return false, err
	}
	for _, job := range batch {
		if !rooms[job.req.AppID].take(job.req) {
			return false, nil
		}
	}
	return true, nil
}

// pgRoom is an application's room as importsFit reads it, less the
// contacts of the imports before in the batch.
type pgRoom struct {
	queued, balance, price int64
	prepaid                bool
}

// take counts an import's contacts into the room and tells whether it
// fits as readImport would judge it with all of them added: the bound on
// what is queued, the imports before it included, and a prepaid wallet
// that pays for its own contacts' calls.
func (r *pgRoom) take(req domain.ImportRequest) bool {
	n := int64(len(req.Contacts))
	r.queued += n
	if req.MaxQueued > 0 && r.queued > req.MaxQueued {
		return false
	}
	return !r.prepaid || r.balance >= n*r.price
}

// errFittingImportFailed is writeFittingImports' statement failing,
// and the transaction with it.
var errFittingImportFailed = errors.New("an import's statement failed")

// writeFittingImports stores imports that all fit in one statement
// (importsSQL) and sets their answers.
func writeFittingImports(ctx context.Context, tx pgx.Tx, jobs []*pgImport) error {
	rows, err := tx.Query(ctx, importsSQL, batchArgs(jobs)...)
	if err != nil {
		return fmt.Errorf("%w: %w", errFittingImportFailed, err)
	}
	inserted, err := insertedIDs(rows)
	if err != nil {
		return fmt.Errorf("%w: %w", errFittingImportFailed, err)
	}
	for _, job := range jobs {
		job.answer(inserted)
	}
	return nil
}

// pipelineImports sends the imports in one pipeline and reads their
// answers up to the first that fails, whose index it returns (-1: none
// did), its error in results. err is the pipeline's own failure, when an
// import's did not fail alone.
func pipelineImports(ctx context.Context, tx pgx.Tx, jobs []*pgImport, results []error) (failed int, err error) {
	var b pgx.Batch
	for i, job := range jobs {
		b.Queue(fmt.Sprintf(`SAVEPOINT j%d`, i))
		b.Queue(importSQL, job.args()...)
		b.Queue(roomSQL, job.req.AppID)
	}
	br := tx.SendBatch(ctx, &b)
	for i, job := range jobs {
		if results[i] = readImport(br, job); results[i] != nil {
			br.Close() // the failure is the import's; ROLLBACK TO tells whether the connection is well
			return i, nil
		}
	}
	return -1, br.Close()
}

// readImport reads one import's answers from the pipeline (its
// savepoint, its statement, the room it leaves) and sets its result; an
// error fails this import alone.
func readImport(br pgx.BatchResults, job *pgImport) error {
	if _, err := br.Exec(); err != nil {
		return err
	}
	if err := readInserted(br, job); err != nil {
		return err
	}
	var queued, balance, price int64
	var prepaid bool
	if err := br.QueryRow().Scan(&queued, &prepaid, &balance, &price); err != nil {
		return err
	}
	added := len(job.res.Added)
	if added == 0 {
		return nil
	}
	if max := job.req.MaxQueued; max > 0 && queued > max {
		return domain.ErrQueueFull(queued-int64(added), max, added)
	}
	if prepaid && balance < int64(added)*price {
		return domain.ErrWalletEmpty
	}
	return nil
}

// readInserted reads an import's statement from the pipeline and sorts
// its contacts into its result.
func readInserted(br pgx.BatchResults, job *pgImport) error {
	rows, err := br.Query()
	if err != nil {
		return err
	}
	inserted, err := insertedIDs(rows)
	if err != nil {
		return err
	}
	job.answer(inserted)
	return nil
}

// insertedIDs reads the ids an import statement returned.
func insertedIDs(rows pgx.Rows) (map[string]bool, error) {
	defer rows.Close()
	inserted := map[string]bool{}
	var id string
	for rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		inserted[id] = true
	}
	return inserted, rows.Err()
}

// answer sorts the import's contacts into its result: added if inserted
// holds their id, else skipped as already queued.
func (job *pgImport) answer(inserted map[string]bool) {
	res := job.res
	res.Skipped = append([]domain.SkippedContact(nil), job.req.Skipped...)
	addInserted(job.req, res, func(id string) bool { return inserted[id] })
	job.allInvalid = len(res.Added) == 0
}
