// Package writehealth owns the store's memory of writes that could not be
// stored for want of room: a full disk, a SQLite database at its size limit,
// an I/O error, PostgreSQL out of resources. The store notes every failed
// write here; readiness then fails until a probe write is stored again
// (docs/operations.md#health), so a load balancer stops sending imports
// that would only be answered 1402.
package writehealth

import (
	"errors"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// State is one store's: the last storage failure noted, until cleared.
type State struct {
	mu      sync.Mutex
	failure error
}

// Note remembers err when it says the database had no room to store a
// write; any other error (a refused import, a constraint) is the writer's
// business, not readiness's, and leaves the state as it is.
func (s *State) Note(err error) {
	if !IsStorageError(err) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failure = err
}

// Failure is the storage failure noted last, nil when none is.
func (s *State) Failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

// Clear forgets the failure seen, a probe write having been stored since;
// a failure noted meanwhile stays.
func (s *State) Clear(seen error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure == seen {
		s.failure = nil
	}
}

// ProbeKey and ProbeValue are the row a probe write stores and deletes in
// one transaction: as large as the rows of a sizeable import, so it needs
// room where a write of a few bytes might still find some.
const ProbeKey = "storage_probe"

var ProbeValue = strings.Repeat("x", 256<<10)

// IsStorageError says whether err is the database failing to store a
// write for want of room or of a working disk: SQLite's SQLITE_FULL and
// SQLITE_IOERR (with their extended codes), PostgreSQL's class 53
// (insufficient resources: disk_full, out_of_memory, ...) and io_error.
func IsStorageError(err error) bool {
	if err == nil {
		return false // every write's result passes here: no allocation for the common case
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR:
			return true
		}
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "53") || pe.Code == "58030"
	}
	return false
}
