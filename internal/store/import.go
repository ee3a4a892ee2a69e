package store

import (
	"context"
	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// ---- imports ----

// Import stores the request's valid contacts in one durable commit and
// returns them with their new contact_ids. Contacts whose phone is already
// pending for the scenario (when duplicates are not allowed) are skipped.
// It fails with errAllInvalid when nothing is left to add (the import and
// its reasons are still recorded), errQueueFull when the application would
// have more than req.MaxQueued unfinished contacts, and errWalletEmpty when
// a prepaid wallet cannot pay one call per added contact (for these two
// nothing is recorded). It runs in the one writer's group commit, its
// statements those prepared when the store opened (writeStmts).
func (s *SQLite) Import(ctx context.Context, req domain.ImportRequest, now time.Time) (*domain.ImportResult, error) {
	var res *domain.ImportResult
	allInvalid := false
	err := s.WriteData(ctx, func(tx sqldb.SQLQueryer) (err error) {
		res, allInvalid, err = importTx(ctx, sqldb.SQLShared(tx), req, now, s.known >= countedVersion)
		return err
	})
	return imported(s.metrics.imports, res, allInvalid, err)
}

// importTx is an import's work in SQLite's writer (PostgreSQL pipelines
// its own: postgres_import.go); allInvalid when nothing was added. count:
// the import keeps the counts of new contacts itself (countAdded), where
// no trigger does (a database from before countedVersion has them).
func importTx(ctx context.Context, tx sqldb.Querier, req domain.ImportRequest, now time.Time, count bool) (res *domain.ImportResult, allInvalid bool, err error) {
	res = &domain.ImportResult{ImportID: uuid.NewString(), Skipped: append([]domain.SkippedContact(nil), req.Skipped...)}
	if err := insertContacts(ctx, tx, req, res, now); err != nil {
		return nil, false, err
	}
	queued := int64(-1) // not read yet
	if count && len(res.Added) > 0 {
		if queued, err = countAdded(ctx, tx, req, len(res.Added)); err != nil {
			return nil, false, err
		}
	}
	if len(res.Added) == 0 {
		// Nothing was inserted; the import and its reasons are still
		// recorded for the admin API.
		return res, true, recordImport(ctx, tx, req, res, importAllInvalid, now)
	}
	if err := checkQueued(ctx, tx, req.AppID, req.MaxQueued, len(res.Added), queued); err != nil {
		return nil, false, err
	}
	// A failure here undoes the inserts with the rest of the job.
	if err := checkBalance(ctx, tx, req.AppID, len(res.Added)); err != nil {
		return nil, false, err
	}
	return res, false, recordImport(ctx, tx, req, res, importAdded, now)
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

// insertContacts adds the contacts in multi-row statements of contactChunk
// rows, prepared once; RETURNING tells which rows the pending-phone index
// let in, the others are duplicates.
func insertContacts(ctx context.Context, tx sqldb.Querier, req domain.ImportRequest, res *domain.ImportResult, now time.Time) error {
	inserted := make(map[string]bool, len(req.Contacts))
	// One destination for every row: this runs in the writer.
	var id string
	dest := []any{&id}
	collect := func(scan func(...any) error) error {
		if err := scan(dest...); err != nil {
			return err
		}
		inserted[id] = true
		return nil
	}
	// The values every row shares are boxed once: this loop runs in
	// the writer, which every import waits for.
	var (
		at       any = Millis(now)
		unique   any = boolInt(req.UniquePhone)
		camp         = nullString(req.CampaignID)
		appID    any = req.AppID
		scenario any = req.ScenarioID
		importID any = res.ImportID
	)
	args := make([]any, 0, min(len(req.Contacts), contactChunk)*11)
	for start := 0; start < len(req.Contacts); start += contactChunk {
		chunk := req.Contacts[start:min(start+contactChunk, len(req.Contacts))]
		args = args[:0]
		for _, c := range chunk {
			args = append(args, c.ID, appID, scenario, camp, importID, c.Phone, c.Fields, unique, at, at, at)
		}
		if err := tx.Query(ctx, insertContactsSQL[len(chunk)], args, collect); err != nil {
			return err
		}
	}
	addInserted(req, res, inserted)
	return nil
}

// addInserted sorts the request's contacts into res: added if inserted
// holds their id, else skipped as a phone already queued.
func addInserted(req domain.ImportRequest, res *domain.ImportResult, inserted map[string]bool) {
	res.Added = slices.Grow(res.Added[:0], len(inserted))
	for _, c := range req.Contacts {
		if !inserted[c.ID] {
			input, _ := domain.MarshalJSON(c.Input)
			res.Skipped = append(res.Skipped, domain.SkippedContact{Position: c.Position, Input: input, Reason: duplicateReason})
			continue
		}
		res.Added = append(res.Added, domain.AddedContact{ID: c.ID, Echo: c.Echo})
	}
}

// contactChunk rows per INSERT: large enough to amortise the statement,
// small enough to stay far below SQLite's parameter limit.
const contactChunk = 50

// insertContactsSQL[n] inserts n contacts on SQLite; imports need every
// chunk size.
var insertContactsSQL = func() (q [contactChunk + 1]string) {
	for n := 1; n <= contactChunk; n++ {
		q[n] = `INSERT INTO contacts
	(id, app_id, scenario_id, campaign_id, import_id, phone, fields, unique_phone, next_attempt_at, created_at, updated_at)
	VALUES ` + strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?), ", n), ", ") + `
	ON CONFLICT DO NOTHING RETURNING id`
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
	queuedSQL       = `SELECT n FROM queued_contacts WHERE app_id = ?`
	insertImportSQL = `INSERT INTO imports (id, app_id, scenario_id, campaign_id, requested, added, skipped, code, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	insertSkippedSQL = `INSERT INTO skipped_contacts (import_id, position, input, reason) VALUES (?, ?, ?, ?)`
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

// recordImport writes the import's row and its skipped contacts, a
// prepared statement a row.
func recordImport(ctx context.Context, tx sqldb.Querier, req domain.ImportRequest, res *domain.ImportResult, code int, now time.Time) error {
	requested := len(req.Contacts) + len(req.Skipped)
	if _, err := tx.Exec(ctx, insertImportSQL, res.ImportID, req.AppID, req.ScenarioID, nullString(req.CampaignID),
		requested, len(res.Added), len(res.Skipped), code, Millis(now)); err != nil {
		return err
	}
	if len(res.Skipped) == 0 {
		return nil
	}
	for _, sk := range res.Skipped {
		if _, err := tx.Exec(ctx, insertSkippedSQL, res.ImportID, sk.Position, string(sk.Input), sk.Reason); err != nil {
			return err
		}
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
