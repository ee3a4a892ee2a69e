package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"dialbox/internal/destinations"
	"dialbox/internal/domain"
	"dialbox/internal/recordings"
	"dialbox/internal/sqldb"
)

// ---- what the scheduler reads ----

// ActiveScenarios are the scenarios the engine dials, oldest first (ties
// by tenant, then by id byte by byte, on both databases).
func (s *sqlStore) ActiveScenarios(ctx context.Context) ([]*domain.Scenario, error) {
	return sqldb.Collect(ctx, s.db, scanScenario, `SELECT `+scenarioColumns+` FROM scenarios
		WHERE status = 'ACTIVE' ORDER BY created_at, app_id, id`+s.db.Dialect().CollateC())
}

// DueContacts returns up to limit contacts of a scenario due at now, the
// earliest due first, leaving out those of paused campaigns.
func (s *sqlStore) DueContacts(ctx context.Context, appID int64, scenarioID string, now time.Time, limit int) ([]domain.DueContact, error) {
	return sqldb.Collect(ctx, s.db, scanDueContact, `SELECT c.seq, c.phone, c.fields, coalesce(c.campaign_id, '') FROM contacts c
		WHERE c.app_id = ? AND c.scenario_id = ? AND c.state = 'queued' AND c.next_attempt_at <= ?
			AND (c.campaign_id IS NULL OR NOT EXISTS (SELECT 1 FROM campaigns k
				WHERE k.app_id = c.app_id AND k.id = c.campaign_id AND k.paused = 1))
		ORDER BY c.next_attempt_at, c.seq LIMIT ?`, appID, scenarioID, Millis(now), limit)
}

func scanDueContact(row sqldb.Row) (domain.DueContact, error) {
	var c domain.DueContact
	err := row.Scan(&c.Seq, &c.Phone, &c.Fields, &c.Campaign)
	return c, err
}

// NextDue is the earliest time after now at which a queued contact of the
// scenario falls due; ok is false when none is waiting.
func (s *sqlStore) NextDue(ctx context.Context, appID int64, scenarioID string, now time.Time) (t time.Time, ok bool, err error) {
	var v *int64
	err = s.db.QueryRow(ctx, `SELECT min(next_attempt_at) FROM contacts
		WHERE app_id = ? AND scenario_id = ? AND state = 'queued' AND next_attempt_at > ?`,
		appID, scenarioID, Millis(now)).Scan(&v)
	if err != nil || v == nil {
		return time.Time{}, false, err
	}
	return FromMillis(*v), true, nil
}

// EnabledHotlines is the pool's enabled numbers and trunk.
func (s *sqlStore) EnabledHotlines(ctx context.Context, appID int64, poolKey string) (domain.PoolLines, error) {
	// Numbers ordered byte by byte, on both databases.
	var out domain.PoolLines
	err := s.db.Query(ctx, `SELECT p.trunk, h.number FROM hotline_pools p
		JOIN hotlines h ON h.app_id = p.app_id AND h.pool_key = p.key AND h.enabled = 1
		WHERE p.app_id = ? AND p.key = ? ORDER BY h.number`+s.db.Dialect().CollateC(), []any{appID, poolKey},
		func(scan func(...any) error) error {
			var n string
			if err := scan(&out.Trunk, &n); err != nil {
				return err
			}
			out.Numbers = append(out.Numbers, n)
			return nil
		})
	if err != nil {
		return domain.PoolLines{}, err
	}
	return out, nil
}

// ---- what the scheduler writes ----

// ClaimCalls moves the contacts to dialing and records a call for each, in
// one commit, before any is dialled: a crash after it leaves calls that the
// next start settles. It returns the claims that took (a contact that is no
// longer queued is left out).
func (s *SQLite) ClaimCalls(ctx context.Context, claims []domain.CallClaim, _ func() time.Time) ([]domain.CallClaim, error) {
	var out []domain.CallClaim
	err := s.writeRerunnable(ctx, func(tx sqldb.SQLQueryer) error {
		out = out[:0] // a rerun starts again
		for _, c := range claims {
			err := tx.QueryRowContext(ctx, `UPDATE contacts SET state = 'dialing', attempts = attempts + 1, updated_at = ?
				WHERE seq = ? AND state = 'queued' RETURNING attempts`, Millis(c.Start), c.Contact.Seq).Scan(&c.Attempt)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, started_at, ad_phone)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, c.CallID, c.Contact.Seq, c.AppID, c.Attempt, c.Hotline, Millis(c.Start),
				nullString(c.AdPhone)); err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// EndCall settles one call: the call record, the wallet charge, the
// contact's next state and the webhook events, all in one commit so none
// can be seen (or survive a crash) without the others.
func (s *SQLite) EndCall(ctx context.Context, e domain.CallEnd) error {
	return s.writeRerunnable(ctx, func(tx sqldb.SQLQueryer) error { return endCallTx(sqliteTx(tx), e) })
}

// SettleInterrupted ends every call a previous run left up (a crash or a
// kill): recorded CANCELED, not charged, the contact queued again. It
// returns how many it settled.
func (s *SQLite) SettleInterrupted(ctx context.Context, now, firstTry time.Time) (int, error) {
	n := 0
	err := s.WriteData(ctx, func(tx sqldb.SQLQueryer) error {
		n = 0
		ids, err := sqldb.Collect(ctx, sqldb.SQLShared(tx), scanCallID, `SELECT id FROM calls WHERE state = 'dialing'`)
		if err != nil {
			return err
		}
		for _, id := range ids {
			res := domain.DialResult{Outcome: domain.OutcomeCanceled, Cause: domain.OutcomeCause[domain.OutcomeCanceled], EndedAt: now}
			if err := endCallTx(sqliteTx(tx), domain.CallEnd{CallID: id, Result: res, Interrupted: true, RetryAt: now, Now: now, FirstTry: firstTry}); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

func scanCallID(row sqldb.Row) (string, error) {
	var id string
	err := row.Scan(&id)
	return id, err
}

// CallsUp is false: one server owns a SQLite database (the serve lock),
// so its engine's own counts are every call up.
func (s *SQLite) CallsUp(ctx context.Context, appID int64) (domain.CallsUp, bool, error) {
	return domain.CallsUp{}, false, nil
}

// TrunkRoom is false: one server owns a SQLite database, so its dialer's
// own count of a trunk's calls is every call on it.
func (s *SQLite) TrunkRoom(ctx context.Context, trunk string, capacity domain.TrunkCapacity, now time.Time) (int, bool, error) {
	return 0, false, nil
}

// TakeOverCalls settles nothing: one server owns a SQLite database (the
// serve lock), and its start settled what an earlier run left up.
func (s *SQLite) TakeOverCalls(ctx context.Context, now, firstTry time.Time) (int, error) {
	return 0, nil
}

// callCost is what a call costs: connected calls (ANSWERED, VOICE_MAIL)
// price_per_minute per started minute of talk, at least price_per_call;
// calls nobody picked up are free.
func callCost(w domain.Wallet, res domain.DialResult, talkSeconds int64) int64 {
	if res.AnsweredAt == nil {
		return 0
	}
	return max(w.PricePerCall, (talkSeconds+59)/60*w.PricePerMinute)
}

// retries reports whether re_call asks for another try after outcome.
func retries(rc domain.ReCall, outcome string) bool {
	switch outcome {
	case domain.OutcomeBusy:
		return rc.IsBusy
	case domain.OutcomeNoAnswer:
		return rc.IsNoAnswer
	case domain.OutcomeFailed:
		return rc.IsFailed
	case domain.OutcomeVoiceMail:
		return rc.IsVoiceMail
	}
	return false
}

// endCallTx settles a call: its record, the webhook events, then the
// contact and the wallet. Those two last: on a database several nodes
// share they are the tenant's hot rows (the contact's state moves the
// tenant's count of unfinished contacts), locked until the commit, so
// they are locked as late as possible (lockUnfinished, then the contact,
// then the wallet; docs/postgres.md#claiming-calls).
func endCallTx(tx settleTx, e domain.CallEnd) error {
	var (
		contactSeq, appID, startedMS int64
		attempt                      int
		hotline                      string
	)
	err := tx.queryRow(`SELECT contact_seq, app_id, attempt, hotline, started_at FROM calls
		WHERE id = ? AND state = 'dialing'`, e.CallID).Scan(&contactSeq, &appID, &attempt, &hotline, &startedMS)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // already settled: never charge or report a call twice
	}
	if err != nil {
		return err
	}
	res := e.Result
	if e.Interrupted {
		res.AnsweredAt, res.Talk, res.Script, res.Recording = nil, 0, nil, 0
	}
	sr, err := domain.CallResults(res)
	if err != nil {
		return err
	}
	talk := int64((res.Talk + time.Second - 1) / time.Second) // started seconds
	w, err := scanWallet(tx.queryRow(walletQuery, appID))
	if err != nil {
		return err
	}
	cost := callCost(w, res, talk)
	now := Millis(e.Now)
	if err := tx.exec(`UPDATE calls SET state = 'ended', outcome = ?, cause = ?, answered_at = ?, ended_at = ?,
		duration = ?, cost = ?, answered_by = ?, digits = ?, result = ?, steps = ?, transcript = ?, recording_bytes = ? WHERE id = ?`,
		res.Outcome, res.Cause, nullMS(res.AnsweredAt), Millis(res.EndedAt), talk, cost,
		sr.AnsweredBy, sr.Digits, sr.Result, string(sr.Steps), string(sr.Transcript), res.Recording, e.CallID); err != nil {
		return err
	}

	willRetry := e.Interrupted
	if !willRetry && retries(e.ReCall, res.Outcome) {
		var counted int
		if err := tx.queryRow(`SELECT count(*) FROM calls WHERE contact_seq = ? AND state = 'ended'
			AND outcome <> 'CANCELED'`, contactSeq).Scan(&counted); err != nil {
			return err
		}
		willRetry = counted <= e.ReCall.Times
	}

	var c struct {
		id, scenarioID, phone, fields string
		campaignID                    sql.NullString
	}
	if err := tx.queryRow(`SELECT id, scenario_id, campaign_id, phone, fields FROM contacts WHERE seq = ?`, contactSeq).
		Scan(&c.id, &c.scenarioID, &c.campaignID, &c.phone, &c.fields); err != nil {
		return err
	}
	data := domain.EventData{
		ContactID: c.id, Fields: json.RawMessage(c.fields), Phone: c.phone, ScenarioID: c.scenarioID,
		CallID: e.CallID, Attempt: attempt, Hotline: hotline, Outcome: res.Outcome, Cause: res.Cause,
		StartedAt: domain.EventTime(FromMillis(startedMS)), EndedAt: domain.EventTime(res.EndedAt),
		Duration: talk, Cost: cost, WillRetry: willRetry,
		AnsweredBy: sr.AnsweredBy, Digits: sr.Digits, Result: sr.Result, Steps: sr.Steps, Transcript: sr.Transcript,
	}
	if c.campaignID.Valid {
		data.CampaignID = &c.campaignID.String
	}
	if res.AnsweredAt != nil {
		t := domain.EventTime(*res.AnsweredAt)
		data.AnsweredAt = &t
	}
	if willRetry {
		t := domain.EventTime(e.RetryAt)
		data.NextAttemptAt = &t
	}
	if res.Recording > 0 {
		var apiKey string
		if err := tx.queryRow(`SELECT api_key FROM applications WHERE id = ?`, appID).Scan(&apiKey); err != nil {
			return err
		}
		data.RecordingURL = recordings.URL(e.RecordingBase, apiKey, c.id, e.CallID)
	}
	endpoints, err := subscribedEndpoints(tx, appID)
	if err != nil {
		return err
	}
	// The events go in with one statement: a settle's is the writer's
	// hottest path.
	var out outbox
	if err := out.add(endpoints, appID, domain.EventCallCompleted, data, e.Now, e.FirstTry); err != nil {
		return err
	}
	if !willRetry {
		var total int64
		if err := tx.queryRow(`SELECT count(*), coalesce(sum(cost), 0) FROM calls WHERE contact_seq = ?`, contactSeq).
			Scan(&data.Attempts, &total); err != nil {
			return err
		}
		data.TotalCost = &total
		if err := out.add(endpoints, appID, domain.EventContactCompleted, data, e.Now, e.FirstTry); err != nil {
			return err
		}
	}
	if err := out.insert(tx); err != nil {
		return err
	}

	if willRetry {
		// Still unfinished: the tenant's count does not move.
		if err := tx.exec(`UPDATE contacts SET state = 'queued', next_attempt_at = ?, updated_at = ? WHERE seq = ?`,
			Millis(e.RetryAt), now, contactSeq); err != nil {
			return err
		}
	} else {
		if err := tx.lockUnfinished(appID); err != nil {
			return err
		}
		if err := tx.execLast(`UPDATE contacts SET state = 'done', outcome = ?, updated_at = ? WHERE seq = ?`,
			res.Outcome, now, contactSeq); err != nil {
			return err
		}
	}
	if w.Prepaid && cost > 0 {
		// A call up is never cut for money, so its full price is taken even
		// when that goes below zero; the scheduler starts no call the
		// balance cannot cover.
		if err := tx.execLast(`UPDATE wallets SET balance = balance - ?, updated_at = ? WHERE app_id = ?`,
			cost, now, appID); err != nil {
			return err
		}
	}
	return nil
}

// HoldContacts settles, in one commit, the due contacts the calling rules
// kept from being dialled: each ends DO_NOT_CALL (final, free; or the
// hold's outcome: CANCELED for a stopped campaign's contacts) with an
// attempt record that was never placed (no hotline, the outcome's cause, no talk),
// its call_blocks row, and its contact.completed event. No call.completed
// is sent: no call was made (docs/compliance.md#the-do_not_call-outcome). A
// contact no longer queued (a reset, a deleted scenario) is left alone.
// On PostgreSQL the tenants' counts of unfinished contacts are locked
// first, in the order of their ids, in one statement, as a settle and an
// import take them, so none of them deadlocks with another; SQLite's one
// writer needs no lock.
func (s *sqlStore) HoldContacts(ctx context.Context, holds []domain.CallHold, now, firstTry time.Time) error {
	return s.writeRerunnable(ctx, func(q sqldb.Querier) error {
		if q.Dialect() == sqldb.Postgres {
			var apps []int64
			for _, h := range holds {
				apps = append(apps, h.AppID)
			}
			slices.Sort(apps)
			if _, err := q.Exec(ctx, `SELECT 1 FROM queued_contacts WHERE app_id = ANY(?) ORDER BY app_id FOR UPDATE`,
				slices.Compact(apps)); err != nil {
				return err
			}
		}
		return holdContactsTx(settleOn(ctx, q), holds, now, firstTry)
	})
}

// holdContactsTx is HoldContacts in a transaction of either store.
func holdContactsTx(tx settleTx, holds []domain.CallHold, now, firstTry time.Time) error {
	endpoints := map[int64]map[string][]string{}
	var out outbox // every hold's event, inserted at the end
	for _, h := range holds {
		var (
			data    domain.EventData
			attempt int
			camp    sql.NullString
			fields  string
		)
		outcome := cmp.Or(h.Outcome, domain.OutcomeDoNotCall)
		err := tx.queryRow(`UPDATE contacts SET state = 'done', outcome = ?, attempts = attempts + 1, updated_at = ?
			WHERE seq = ? AND state = 'queued' RETURNING id, scenario_id, campaign_id, phone, fields, attempts`,
			outcome, Millis(now), h.Contact.Seq).Scan(&data.ContactID, &data.ScenarioID, &camp, &data.Phone, &fields, &attempt)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		data.CallID, data.Attempt, data.Outcome, data.Cause = domain.NewV7(), attempt, outcome, domain.OutcomeCause[outcome]
		if err := tx.exec(`INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, state, outcome, cause, started_at, ended_at)
			VALUES (?, ?, ?, ?, '', 'ended', ?, ?, ?, ?)`, data.CallID, h.Contact.Seq, h.AppID, attempt,
			data.Outcome, data.Cause, Millis(now), Millis(now)); err != nil {
			return err
		}
		if err := tx.exec(`INSERT INTO call_blocks (app_id, scenario_id, contact_id, phone, reason, at)
			VALUES (?, ?, ?, ?, ?, ?)`, h.AppID, data.ScenarioID, data.ContactID, data.Phone, h.Reason, Millis(now)); err != nil {
			return err
		}
		eps, ok := endpoints[h.AppID]
		if !ok {
			if eps, err = subscribedEndpoints(tx, h.AppID); err != nil {
				return err
			}
			endpoints[h.AppID] = eps
		}
		var total int64
		if err := tx.queryRow(`SELECT count(*), coalesce(sum(cost), 0) FROM calls WHERE contact_seq = ?`, h.Contact.Seq).
			Scan(&data.Attempts, &total); err != nil {
			return err
		}
		data.Fields, data.TotalCost = json.RawMessage(fields), &total
		if camp.Valid {
			data.CampaignID = &camp.String
		}
		data.StartedAt, data.EndedAt = domain.EventTime(now), domain.EventTime(now)
		data.AnsweredBy, data.Steps, data.Transcript = domain.AnsweredByUnknown, json.RawMessage(`[]`), json.RawMessage(`[]`)
		if err := out.add(eps, h.AppID, domain.EventContactCompleted, data, now, firstTry); err != nil {
			return err
		}
	}
	return out.insert(tx)
}

// AppDestinations reads the tenant's own destination rules.
func (s *sqlStore) AppDestinations(ctx context.Context, appID int64) (destinations.Rules, error) {
	var allow, deny string
	err := s.db.QueryRow(ctx, `SELECT destination_allow, destination_deny FROM applications WHERE id = ?`,
		appID).Scan(&allow, &deny)
	if errors.Is(err, sql.ErrNoRows) {
		return destinations.Rules{}, domain.ErrNotFound
	}
	if err != nil {
		return destinations.Rules{}, err
	}
	return scanDestinations(allow, deny)
}
