package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// The do-not-call lists in the database (docs/compliance.md#how-lists-are-stored):
// the national register and one list per tenant, each a current version in
// dnc_lists with its numbers in dnc_numbers.

// listApp is dnc_lists.app_id for a list selector.
func listApp(list int64) any {
	if list == domain.NationalList {
		return nil
	}
	return list
}

// DNCListings says, for each of phones (E.164) on a list that screens the
// calls, which list: the tenant's list always, the national register only
// when national is set (it restricts advertising calls alone:
// docs/compliance.md#how-dialbox-enforces-it), and the national register
// when both hold it. One query per few hundred numbers.
func (s *sqlStore) DNCListings(ctx context.Context, appID int64, phones []string, national bool) (map[string]string, error) {
	lists := `l.app_id = ?`
	if national {
		lists = `(l.app_id IS NULL OR l.app_id = ?)`
	}
	out := map[string]string{}
	const batch = 500
	for from := 0; from < len(phones); from += batch {
		var numbers []int64
		for _, p := range phones[from:min(from+batch, len(phones))] {
			if n, ok := domain.DNCNumber(p); ok {
				numbers = append(numbers, n)
			}
		}
		if len(numbers) == 0 {
			continue
		}
		in, args := sqldb.In(s.db.Dialect(), "n.number", numbers)
		err := s.db.Query(ctx, `SELECT n.number, l.app_id IS NULL FROM dnc_lists l
			JOIN dnc_numbers n ON n.list_id = l.id
			WHERE l.state = 'current' AND `+lists+` AND `+in, append([]any{appID}, args...),
			func(scan func(...any) error) error {
				var n int64
				var national bool
				if err := scan(&n, &national); err != nil {
					return err
				}
				p := domain.DNCE164(n)
				if national {
					out[p] = domain.ReasonDNCNational
				} else if out[p] == "" {
					out[p] = domain.ReasonDNCTenant
				}
				return nil
			})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// currentList is the id of a list's current version, made (empty) when the
// list has none yet; two nodes making a list's first version at once make
// one.
func currentList(ctx context.Context, tx sqldb.Querier, list int64, now time.Time) (int64, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO dnc_lists (app_id, state, loaded_at) VALUES (?, 'current', ?)
		ON CONFLICT ((coalesce(app_id, 0))) WHERE state = 'current' DO NOTHING`, listApp(list), Millis(now)); err != nil {
		return 0, err
	}
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM dnc_lists WHERE state = 'current' AND app_id IS NOT DISTINCT FROM ?`,
		listApp(list)).Scan(&id)
	return id, err
}

// addDNCNumbers puts numbers on list version id and returns how many were
// new: PostgreSQL takes them as one array, in one statement; SQLite a row
// a statement, its writer's statements costing no round trip.
func addDNCNumbers(ctx context.Context, tx sqldb.Querier, id int64, numbers []int64, addedAt any) (int, error) {
	if tx.Dialect() == sqldb.Postgres {
		n, err := tx.Exec(ctx, `INSERT INTO dnc_numbers (list_id, number, added_at)
			SELECT ?, n, ? FROM unnest(?::bigint[]) AS n ON CONFLICT DO NOTHING`, id, addedAt, numbers)
		return int(n), err
	}
	added := 0
	for _, n := range numbers {
		k, err := tx.Exec(ctx, `INSERT INTO dnc_numbers (list_id, number, added_at) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING`, id, n, addedAt)
		if err != nil {
			return added, err
		}
		added += int(k)
	}
	return added, nil
}

// AddDNC puts E.164 numbers on a list (domain.NationalList or an application's
// id) and returns how many were new to it.
func (s *sqlStore) AddDNC(ctx context.Context, list int64, phones []string, now time.Time) (int, error) {
	numbers := make([]int64, 0, len(phones))
	for _, p := range phones {
		n, ok := domain.DNCNumber(p)
		if !ok {
			return 0, domain.Invalid("numbers", p+" is not an E.164 number")
		}
		numbers = append(numbers, n)
	}
	var added int
	err := s.writeData(ctx, func(tx sqldb.Querier) error {
		id, err := currentList(ctx, tx, list, now)
		if err != nil {
			return err
		}
		added, err = addDNCNumbers(ctx, tx, id, numbers, Millis(now))
		return err
	})
	return added, err
}

// dncChunkRows is how many numbers one commit of a load writes: about a
// tenth of a second, so the server's own commits wait little meanwhile.
const DNCChunkRows = 50_000

// dncRowsPerInsert is how many rows one INSERT statement carries.
const dncRowsPerInsert = 100

// LoadDNC puts numbers (sorted, without repeats) on a list, in commits of
// dncChunkRows, calling progress with the count stored so far. It returns
// how many the list gained. With replace, they become the whole list: they
// are loaded into a new version, which takes the current one's place in
// one short commit at the end (readers never see half a list; a load cut
// short leaves the old list in force), and the old version is then deleted
// a chunk at a time. A chunk's insert is the writer's own (its prepared
// statement of dncRowsPerInsert rows); PostgreSQL's COPYs.
func (s *SQLite) LoadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int)) (int, error) {
	return s.loadDNC(ctx, list, numbers, replace, now, progress, func(id int64, part []int64, addedAt any) (n int, err error) {
		err = s.WriteData(ctx, func(tx sqldb.SQLQueryer) (err error) {
			n, err = insertDNCNumbers(ctx, tx, id, part, addedAt)
			return err
		})
		return n, err
	})
}

// loadDNC is LoadDNC on either store but for the insert of a chunk of
// numbers into list version id, in a commit of its own, which is each
// store's: addedAt is nil in a replace's new version (since the version
// was loaded), where nothing conflicts.
func (s *sqlStore) loadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int),
	insert func(id int64, part []int64, addedAt any) (int, error)) (int, error) {
	var id int64
	err := s.writeData(ctx, func(tx sqldb.Querier) (err error) {
		if replace {
			return tx.QueryRow(ctx, `INSERT INTO dnc_lists (app_id, state, loaded_at) VALUES (?, 'loading', ?) RETURNING id`,
				listApp(list), Millis(now)).Scan(&id)
		}
		id, err = currentList(ctx, tx, list, now)
		return err
	})
	if err != nil {
		return 0, err
	}
	var addedAt any = Millis(now)
	if replace {
		addedAt = nil
	}
	gained := 0
	for from := 0; from < len(numbers); from += DNCChunkRows {
		part := numbers[from:min(from+DNCChunkRows, len(numbers))]
		n, err := insert(id, part, addedAt)
		gained += n
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
	err = s.writeData(ctx, func(tx sqldb.Querier) error {
		if tx.Dialect() == sqldb.Postgres {
			// Another node's switch waits for this one (SQLite's one
			// writer runs one at a time).
			if _, err := tx.Exec(ctx, `LOCK TABLE dnc_lists IN EXCLUSIVE MODE`); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE dnc_lists SET state = 'old' WHERE state = 'current' AND app_id IS NOT DISTINCT FROM ?`,
			listApp(list)); err != nil {
			return err
		}
		n, err := tx.Exec(ctx, `UPDATE dnc_lists SET state = 'current' WHERE id = ?`, id)
		if err == nil && n == 0 {
			err = domain.ErrNotFound
		}
		return err
	})
	if errors.Is(err, domain.ErrNotFound) {
		// Another load dropped this version while its numbers were still
		// coming: drop them too.
		if err := s.dropDNCVersion(ctx, id); err != nil {
			return 0, err
		}
		return 0, errors.New("the list was replaced by another load while this one ran; this one is dropped")
	}
	if err != nil {
		return 0, err
	}
	return gained, s.dropOldDNC(ctx, list, id)
}

// insertDNCNumbers adds numbers to list version id, dncRowsPerInsert a
// statement (the writer's cache prepares it from the second chunk on); it
// returns how many were new.
func insertDNCNumbers(ctx context.Context, tx sqldb.SQLQueryer, id int64, numbers []int64, addedAt any) (int, error) {
	stmt := func(rows int) string {
		return `INSERT INTO dnc_numbers (list_id, number, added_at) VALUES (?, ?, ?)` +
			strings.Repeat(`, (?, ?, ?)`, rows-1) + ` ON CONFLICT DO NOTHING`
	}
	full := stmt(dncRowsPerInsert)
	args := make([]any, 0, 3*dncRowsPerInsert)
	gained := 0
	for from := 0; from < len(numbers); from += dncRowsPerInsert {
		part := numbers[from:min(from+dncRowsPerInsert, len(numbers))]
		args = args[:0]
		for _, n := range part {
			args = append(args, id, n, addedAt)
		}
		query := full
		if len(part) < dncRowsPerInsert {
			query = stmt(len(part))
		}
		r, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return gained, err
		}
		k, _ := r.RowsAffected()
		gained += int(k)
	}
	return gained, nil
}

// dropOldDNC deletes the versions of a list older than keep (replaced ones,
// and loads that were cut short).
func (s *sqlStore) dropOldDNC(ctx context.Context, list, keep int64) error {
	old, err := sqldb.Collect(ctx, s.db, func(r sqldb.Row) (id int64, err error) { return id, r.Scan(&id) },
		`SELECT id FROM dnc_lists WHERE app_id IS NOT DISTINCT FROM ? AND id < ? AND state <> 'current'`, listApp(list), keep)
	if err != nil {
		return err
	}
	for _, id := range old {
		if err := s.dropDNCVersion(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// dropDNCVersion deletes a list version, dncChunkRows numbers a commit,
// then the version once it has none.
func (s *sqlStore) dropDNCVersion(ctx context.Context, id int64) error {
	for {
		var n int64
		err := s.writeData(ctx, func(tx sqldb.Querier) (err error) {
			n, err = tx.Exec(ctx, `DELETE FROM dnc_numbers WHERE list_id = ? AND number IN
				(SELECT number FROM dnc_numbers WHERE list_id = ? ORDER BY number LIMIT ?)`, id, id, DNCChunkRows)
			if err == nil && n == 0 {
				_, err = tx.Exec(ctx, `DELETE FROM dnc_lists WHERE id = ?`, id)
			}
			return err
		})
		if err != nil || n == 0 {
			return err
		}
	}
}

// CountDNC is how many numbers a list holds, and when its current version
// was loaded (zero: the list has none).
func (s *sqlStore) CountDNC(ctx context.Context, list int64) (int64, time.Time, error) {
	var n, loaded sql.NullInt64
	err := s.db.QueryRow(ctx, `SELECT l.loaded_at, (SELECT count(*) FROM dnc_numbers n WHERE n.list_id = l.id)
		FROM dnc_lists l WHERE l.state = 'current' AND l.app_id IS NOT DISTINCT FROM ?`, listApp(list)).Scan(&loaded, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	return n.Int64, FromMillis(loaded.Int64), nil
}

// RemoveDNC takes an E.164 number off a list; errNotFound when it is not on it.
func (s *sqlStore) RemoveDNC(ctx context.Context, list int64, e164 string) error {
	n, ok := domain.DNCNumber(e164)
	if !ok {
		return domain.ErrNotFound
	}
	return s.writeData(ctx, func(tx sqldb.Querier) error {
		k, err := tx.Exec(ctx, `DELETE FROM dnc_numbers WHERE number = ? AND list_id =
			(SELECT id FROM dnc_lists WHERE state = 'current' AND app_id IS NOT DISTINCT FROM ?)`, n, listApp(list))
		if err == nil && k == 0 {
			err = domain.ErrNotFound
		}
		return err
	})
}

// LookupDNC lists the lists holding an E.164 number, the national register
// first: with tenant 0 every tenant's, else only that tenant's.
func (s *sqlStore) LookupDNC(ctx context.Context, tenant int64, e164 string) ([]domain.DNCListing, error) {
	n, ok := domain.DNCNumber(e164)
	if !ok {
		return []domain.DNCListing{}, nil
	}
	return sqldb.Collect(ctx, s.db, func(r sqldb.Row) (domain.DNCListing, error) {
		var app string
		var since int64
		err := r.Scan(&app, &since)
		return dncListing(app, since), err
	}, `SELECT coalesce(a.api_key, ''), coalesce(n.added_at, l.loaded_at)
		FROM dnc_lists l JOIN dnc_numbers n ON n.list_id = l.id AND n.number = ?
		LEFT JOIN applications a ON a.id = l.app_id
		WHERE l.state = 'current' AND (l.app_id IS NULL OR CAST(? AS BIGINT) = 0 OR l.app_id = ?)
		ORDER BY l.app_id IS NOT NULL, a.api_key`+s.db.Dialect().CollateC(), n, tenant, tenant)
}

// dncListing is a lookup's row: the list's tenant (its API key, "" for
// the national register) and since when the number is on it.
func dncListing(app string, since int64) domain.DNCListing {
	l := domain.DNCListing{List: "national", App: app, Since: FromMillis(since)}
	if app != "" {
		l.List = "tenant"
	}
	return l
}
