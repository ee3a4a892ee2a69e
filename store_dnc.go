package main

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"time"
)

// The do-not-call lists in the database (docs/compliance.md#how-lists-are-stored):
// the national register and one list per tenant, each a current version in
// dnc_lists with its numbers in dnc_numbers.

// nationalList is the list selector of the national register; any other
// value is the id of the application whose list it is.
const nationalList int64 = 0

// listApp is dnc_lists.app_id for a list selector.
func listApp(list int64) any {
	if list == nationalList {
		return nil
	}
	return list
}

// dncNumber is how a list stores an E.164 number: its digits as an integer.
func dncNumber(e164 string) (int64, bool) {
	digits, ok := strings.CutPrefix(e164, "+")
	if !ok || len(digits) == 0 || len(digits) > 15 {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n > 0
}

// dncE164 is the E.164 form of a stored number.
func dncE164(n int64) string { return "+" + strconv.FormatInt(n, 10) }

// dncListings says, for each of phones (E.164) on the national register or
// on the tenant's list, which: the national register when both hold it.
// One query per few hundred numbers.
func (s *Store) dncListings(ctx context.Context, appID int64, phones []string) (map[string]string, error) {
	out := map[string]string{}
	const batch = 500
	for from := 0; from < len(phones); from += batch {
		part := phones[from:min(from+batch, len(phones))]
		args := []any{appID}
		for _, p := range part {
			if n, ok := dncNumber(p); ok {
				args = append(args, n)
			}
		}
		if len(args) == 1 {
			continue
		}
		rows, err := s.read.QueryContext(ctx, `SELECT n.number, l.app_id IS NULL FROM dnc_lists l
			JOIN dnc_numbers n ON n.list_id = l.id
			WHERE l.state = 'current' AND (l.app_id IS NULL OR l.app_id = ?)
				AND n.number IN (?`+strings.Repeat(",?", len(args)-2)+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var n int64
			var national bool
			if err := rows.Scan(&n, &national); err != nil {
				rows.Close()
				return nil, err
			}
			p := dncE164(n)
			if national {
				out[p] = ReasonDNCNational
			} else if out[p] == "" {
				out[p] = ReasonDNCTenant
			}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// currentList is the id of a list's current version, made (empty) when the
// list has none yet.
func currentList(tx *sql.Tx, list int64, now time.Time) (int64, error) {
	var id int64
	err := tx.QueryRow(`SELECT id FROM dnc_lists WHERE state = 'current' AND app_id IS ?`, listApp(list)).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		err = tx.QueryRow(`INSERT INTO dnc_lists (app_id, state, loaded_at) VALUES (?, 'current', ?) RETURNING id`,
			listApp(list), ms(now)).Scan(&id)
	}
	return id, err
}

// addDNCTx puts E.164 numbers on a list and returns how many were not on
// it already.
func addDNCTx(tx *sql.Tx, list int64, phones []string, now time.Time) (int, error) {
	id, err := currentList(tx, list, now)
	if err != nil {
		return 0, err
	}
	added := 0
	for _, p := range phones {
		n, ok := dncNumber(p)
		if !ok {
			return added, invalid("numbers", p+" is not an E.164 number")
		}
		r, err := tx.Exec(`INSERT INTO dnc_numbers (list_id, number, added_at) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING`, id, n, ms(now))
		if err != nil {
			return added, err
		}
		if k, _ := r.RowsAffected(); k > 0 {
			added++
		}
	}
	return added, nil
}

// AddDNC puts E.164 numbers on a list (nationalList or an application's
// id) and returns how many were new to it.
func (s *Store) AddDNC(ctx context.Context, list int64, phones []string, now time.Time) (int, error) {
	var added int
	err := s.WriteData(ctx, func(tx *sql.Tx) (err error) {
		added, err = addDNCTx(tx, list, phones, now)
		return err
	})
	return added, err
}
