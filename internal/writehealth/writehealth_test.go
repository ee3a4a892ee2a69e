package writehealth

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// Only a storage failure is noted, and it stays until cleared.
func TestNoteKeepsStorageFailuresOnly(t *testing.T) {
	var s State
	s.Note(errors.New("phone number already queued"))
	s.Note(&pgconn.PgError{Code: "23505"}) // unique_violation
	if err := s.Failure(); err != nil {
		t.Fatalf("a failure that is not for want of room was noted: %v", err)
	}
	full := fmt.Errorf("commit: %w", &pgconn.PgError{Code: "53100", Message: "could not extend file"})
	s.Note(full)
	s.Note(errors.New("a later refused import"))
	if err := s.Failure(); err != full {
		t.Fatalf("failure %v, want %v", err, full)
	}
	s.Clear(errors.New("an older failure"))
	if err := s.Failure(); err != full {
		t.Fatalf("cleared a failure noted after the probe began: %v", err)
	}
	s.Clear(full)
	if err := s.Failure(); err != nil {
		t.Fatalf("after Clear: %v", err)
	}
}

// Every write's result is noted, nearly all of them nil: that costs no
// allocation.
func TestIsStorageErrorOfNilAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { IsStorageError(nil) }); n != 0 {
		t.Errorf("%v allocations for a nil error", n)
	}
}
