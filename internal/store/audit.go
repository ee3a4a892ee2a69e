package store

import (
	"context"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// The audit log of the console's actions (docs/console.md#audit-log),
// written once for both stores.

// AddAudit appends one entry to the audit log.
func (s *sqlStore) AddAudit(ctx context.Context, e domain.AuditEntry) error {
	return s.writeData(ctx, func(tx sqldb.Querier) error {
		_, err := tx.Exec(ctx, `INSERT INTO audit_log (at, actor, action, app_key, detail) VALUES (?, ?, ?, ?, ?)`,
			Millis(e.At), e.Actor, e.Action, e.AppKey, e.Detail)
		return err
	})
}

// AuditLog returns up to limit entries, newest first, before the entry
// seq before (0: from the newest).
func (s *sqlStore) AuditLog(ctx context.Context, before int64, limit int) ([]domain.AuditEntry, error) {
	return sqldb.Collect(ctx, s.db, func(row sqldb.Row) (domain.AuditEntry, error) {
		var e domain.AuditEntry
		var at int64
		err := row.Scan(&e.Seq, &at, &e.Actor, &e.Action, &e.AppKey, &e.Detail)
		e.At = FromMillis(at)
		return e, err
	}, `SELECT seq, at, actor, action, app_key, detail FROM audit_log
		WHERE (? = 0 OR seq < ?) ORDER BY seq DESC LIMIT ?`, before, before, limit)
}
