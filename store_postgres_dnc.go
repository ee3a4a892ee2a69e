package main

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Do-not-call lists on PostgreSQL (docs/compliance.md#how-lists-are-stored):
// the tables of schema.sql's migration 9 (schema_postgres.sql's 11), the
// numbers of a replacing load COPYed into a new version and switched in
// one short transaction, the screen at dial time one `= ANY` read.

// dncListings is SQLiteStore.dncListings's rule: the national register
// screens advertising calls only (national), the tenant's list all calls.
func (s *PostgresStore) dncListings(ctx context.Context, appID int64, phones []string, national bool) (map[string]string, error) {
	out := map[string]string{}
	numbers := make([]int64, 0, len(phones))
	for _, p := range phones {
		if n, ok := dncNumber(p); ok {
			numbers = append(numbers, n)
		}
	}
	if len(numbers) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT n.number, l.app_id IS NULL FROM dnc_lists l
		JOIN dnc_numbers n ON n.list_id = l.id
		WHERE l.state = 'current' AND (l.app_id IS NULL AND $3 OR l.app_id = $1) AND n.number = ANY($2)`, appID, numbers, national)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var n int64
		var national bool
		if err := rows.Scan(&n, &national); err != nil {
			return nil, err
		}
		p := dncE164(n)
		if national {
			out[p] = ReasonDNCNational
		} else if out[p] == "" {
			out[p] = ReasonDNCTenant
		}
	}
	return out, rows.Err()
}

// pgCurrentList is currentList on PostgreSQL; two nodes making a list's
// first version at once make one.
func pgCurrentList(ctx context.Context, tx pgx.Tx, list int64, now time.Time) (int64, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO dnc_lists (app_id, state, loaded_at) VALUES ($1, 'current', $2)
		ON CONFLICT ((coalesce(app_id, 0))) WHERE state = 'current' DO NOTHING`, listApp(list), ms(now)); err != nil {
		return 0, err
	}
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM dnc_lists WHERE state = 'current' AND app_id IS NOT DISTINCT FROM $1`,
		listApp(list)).Scan(&id)
	return id, err
}

// pgAddDNC puts numbers on list version id and returns how many were new.
func pgAddDNC(ctx context.Context, tx pgx.Tx, id int64, numbers []int64, addedAt any) (int, error) {
	r, err := tx.Exec(ctx, `INSERT INTO dnc_numbers (list_id, number, added_at)
		SELECT $1, n, $3 FROM unnest($2::bigint[]) AS n ON CONFLICT DO NOTHING`, id, numbers, addedAt)
	return int(r.RowsAffected()), err
}

func (s *PostgresStore) AddDNC(ctx context.Context, list int64, phones []string, now time.Time) (int, error) {
	numbers := make([]int64, 0, len(phones))
	for _, p := range phones {
		n, ok := dncNumber(p)
		if !ok {
			return 0, invalid("numbers", p+" is not an E.164 number")
		}
		numbers = append(numbers, n)
	}
	var added int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		id, err := pgCurrentList(ctx, tx, list, now)
		if err != nil {
			return err
		}
		added, err = pgAddDNC(ctx, tx, id, numbers, ms(now))
		return err
	})
	return added, err
}

// LoadDNC is SQLiteStore.LoadDNC's contract: commits of dncChunkRows, and
// with replace a new version COPYed beside the current one, switched in
// one short transaction that holds the lists' table against another
// switch, then the old version deleted a chunk at a time.
func (s *PostgresStore) LoadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int)) (int, error) {
	var id int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) (err error) {
		if replace {
			return tx.QueryRow(ctx, `INSERT INTO dnc_lists (app_id, state, loaded_at) VALUES ($1, 'loading', $2) RETURNING id`,
				listApp(list), ms(now)).Scan(&id)
		}
		id, err = pgCurrentList(ctx, tx, list, now)
		return err
	})
	if err != nil {
		return 0, err
	}
	gained := 0
	for from := 0; from < len(numbers); from += dncChunkRows {
		part := numbers[from:min(from+dncChunkRows, len(numbers))]
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if !replace {
				n, err := pgAddDNC(ctx, tx, id, part, ms(now))
				gained += n
				return err
			}
			// A new version, and numbers sorted without repeats: nothing
			// to conflict with, so COPY. added_at NULL: since the load.
			n, err := tx.CopyFrom(ctx, pgx.Identifier{"dnc_numbers"}, []string{"list_id", "number"},
				pgx.CopyFromSlice(len(part), func(i int) ([]any, error) { return []any{id, part[i]}, nil }))
			gained += int(n)
			return err
		})
		if err != nil {
			return gained, err
		}
		if progress != nil {
			progress(from + len(part))
		}
	}
	if !replace {
		return gained, nil
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE dnc_lists IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE dnc_lists SET state = 'old' WHERE state = 'current' AND app_id IS NOT DISTINCT FROM $1`,
			listApp(list)); err != nil {
			return err
		}
		r, err := tx.Exec(ctx, `UPDATE dnc_lists SET state = 'current' WHERE id = $1`, id)
		if err == nil && r.RowsAffected() == 0 {
			err = errNotFound
		}
		return err
	})
	if errors.Is(err, errNotFound) {
		// Another load dropped this version while its numbers were still
		// coming: drop them too.
		if err := s.dropDNCNumbers(ctx, id); err != nil {
			return 0, err
		}
		return 0, errors.New("the list was replaced by another load while this one ran; this one is dropped")
	}
	if err != nil {
		return 0, err
	}
	return gained, s.dropOldDNC(ctx, list, id)
}

// dropOldDNC deletes the versions of a list older than keep (replaced ones,
// and loads that were cut short), a chunk of numbers per commit.
func (s *PostgresStore) dropOldDNC(ctx context.Context, list, keep int64) error {
	rows, err := s.pool.Query(ctx, `SELECT id FROM dnc_lists WHERE app_id IS NOT DISTINCT FROM $1 AND id < $2 AND state <> 'current'`,
		listApp(list), keep)
	if err != nil {
		return err
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	for _, id := range old {
		if err := s.dropDNCNumbers(ctx, id); err != nil {
			return err
		}
		if _, err := s.pool.Exec(ctx, `DELETE FROM dnc_lists WHERE id = $1`, id); err != nil {
			return err
		}
	}
	return nil
}

// dropDNCNumbers deletes a list version's numbers, dncChunkRows a commit.
func (s *PostgresStore) dropDNCNumbers(ctx context.Context, id int64) error {
	for {
		r, err := s.pool.Exec(ctx, `DELETE FROM dnc_numbers WHERE list_id = $1 AND number IN
			(SELECT number FROM dnc_numbers WHERE list_id = $1 ORDER BY number LIMIT $2)`, id, dncChunkRows)
		if err != nil {
			return err
		}
		if r.RowsAffected() == 0 {
			return nil
		}
	}
}

func (s *PostgresStore) CountDNC(ctx context.Context, list int64) (int64, time.Time, error) {
	var n, loaded int64
	err := s.pool.QueryRow(ctx, `SELECT l.loaded_at, (SELECT count(*) FROM dnc_numbers n WHERE n.list_id = l.id)
		FROM dnc_lists l WHERE l.state = 'current' AND l.app_id IS NOT DISTINCT FROM $1`, listApp(list)).Scan(&loaded, &n)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	return n, fromMS(loaded), nil
}

func (s *PostgresStore) RemoveDNC(ctx context.Context, list int64, e164 string) error {
	n, ok := dncNumber(e164)
	if !ok {
		return errNotFound
	}
	r, err := s.pool.Exec(ctx, `DELETE FROM dnc_numbers WHERE number = $1 AND list_id =
		(SELECT id FROM dnc_lists WHERE state = 'current' AND app_id IS NOT DISTINCT FROM $2)`, n, listApp(list))
	if err == nil && r.RowsAffected() == 0 {
		err = errNotFound
	}
	return err
}

func (s *PostgresStore) LookupDNC(ctx context.Context, tenant int64, e164 string) ([]DNCListing, error) {
	out := []DNCListing{}
	n, ok := dncNumber(e164)
	if !ok {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT coalesce(a.api_key, ''), coalesce(n.added_at, l.loaded_at)
		FROM dnc_lists l JOIN dnc_numbers n ON n.list_id = l.id AND n.number = $1
		LEFT JOIN applications a ON a.id = l.app_id
		WHERE l.state = 'current' AND (l.app_id IS NULL OR $2::bigint = 0 OR l.app_id = $2)
		ORDER BY l.app_id IS NOT NULL, a.api_key COLLATE "C"`, n, tenant)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var app string
		var since int64
		if err := rows.Scan(&app, &since); err != nil {
			return nil, err
		}
		out = append(out, dncListing(app, since))
	}
	return out, rows.Err()
}
