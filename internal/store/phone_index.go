package store

import (
	"context"
	"database/sql"
	"log/slog"

	"dialbox/internal/sqldb"
)

// SQLite's phone index is kept behind the imports (schema.sql's migration
// 18, docs/benchmarks.md#the-phone-index-behind-the-imports): the writer
// adds contacts to contact_phones after their commit, in batches sorted by
// the index's key, so a batch changes each leaf once, where one commit of
// imports changed about a leaf per contact. Searches read contact_phones
// and scan the contacts not in it yet (phoneSeqs). PostgreSQL keeps its
// index on contacts: its nodes commit side by side, not in seq order, so
// no one mark could say which contacts an index holds.

const (
	// phoneIndexVersion is the migration that moved the phone index
	// behind the imports; an older database keeps contacts_by_phone.
	phoneIndexVersion = 18
	// PhoneIndexEvery is how many contacts may wait for the phone index
	// before the writer adds them: what a search scans beside the index
	// (about 2 ms), against what a batch costs a contact, less the more
	// contacts share its leaves (docs/benchmarks.md#how-many-wait-for-the-phone-index).
	PhoneIndexEvery = 16384
	// PhoneIndexMost bounds one batch, so the writer's other jobs wait for
	// it a fraction of a second at most; what is left goes in the next.
	PhoneIndexMost = 65536
)

// phoneSeqs is SQLite's search by phone: the seqs of appID's contacts
// with that phone, from contact_phones and from the contacts after its
// mark, two arguments each.
const phoneSeqs = `SELECT seq FROM contact_phones WHERE app_id = ? AND phone = ?
	UNION ALL SELECT seq FROM contacts WHERE seq > (SELECT seq FROM contact_phones_indexed) AND app_id = ? AND phone = ?`

// IndexPhones adds to contact_phones up to most of the contacts after its
// mark, the oldest first, in key order, and moves the mark past them. It
// returns how many contacts it read, fewer than most only once none is
// left.
func IndexPhones(ctx context.Context, q sqldb.Querier, most int) (int64, error) {
	var mark, last, n int64
	if err := q.QueryRow(ctx, `SELECT i.seq, coalesce(max(w.seq), i.seq), count(w.seq) FROM contact_phones_indexed i
		LEFT JOIN (SELECT seq FROM contacts WHERE seq > (SELECT seq FROM contact_phones_indexed) ORDER BY seq LIMIT ?) w`, most).
		Scan(&mark, &last, &n); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	// OR IGNORE: a statement that cannot stop midway needs no statement
	// journal (docs/benchmarks.md#no-statement-journal-for-contacts).
	if _, err := q.Exec(ctx, `INSERT OR IGNORE INTO contact_phones (app_id, phone, seq)
		SELECT app_id, phone, seq FROM contacts WHERE seq > ? AND seq <= ? ORDER BY app_id, phone, seq`, mark, last); err != nil {
		return 0, err
	}
	_, err := q.Exec(ctx, `UPDATE contact_phones_indexed SET seq = ?`, last)
	return n, err
}

// indexPhones runs in the writer after a commit: while PhoneIndexEvery
// contacts or more wait for the phone index, it adds them, a batch a
// transaction. A failure leaves them waiting, still found by the
// searches' scan, for the batch after the next commit; it is noted like
// any write's, and logged once until a batch goes in again.
func (s *SQLite) indexPhones() {
	if s.known < phoneIndexVersion {
		return
	}
	for s.unindexed >= PhoneIndexEvery {
		n, err := IndexPhoneBatch(s.write)
		s.stmts.txDone()
		if s.storage.Note(err); err != nil {
			if !s.indexFailing {
				slog.Warn("database: adding contacts to the phone index; searches by phone scan them meanwhile", "waiting", s.unindexed, "err", err)
			}
			s.indexFailing = true
			return
		}
		s.indexFailing = false
		if n < PhoneIndexMost {
			s.unindexed = 0
		} else {
			s.unindexed = max(s.unindexed-n, 0)
		}
	}
}

// IndexPhoneBatch adds one batch of the contacts waiting for the phone
// index (IndexPhones, at most PhoneIndexMost) in a durable transaction of
// its own on db, a writer's connection, and returns how many it read.
func IndexPhoneBatch(db *sql.DB) (int64, error) {
	tx, err := db.Begin()
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	n, err := IndexPhones(context.Background(), sqldb.SQL(tx), PhoneIndexMost)
	if err != nil {
		return 0, err
	}
	return n, tx.Commit()
}

// unindexedAtOpen counts the contacts the phone index does not hold yet.
func unindexedAtOpen(db *sql.DB) (int64, error) {
	var n int64
	err := db.QueryRow(`SELECT count(*) FROM contacts WHERE seq > (SELECT seq FROM contact_phones_indexed)`).Scan(&n)
	return n, err
}
