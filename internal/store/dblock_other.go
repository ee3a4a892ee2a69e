//go:build !unix

package store

import "os"

// Without flock the database is not guarded against restore while in use:
// stop dialbox before `dialbox restore` (docs/operations.md#backup-and-restore).
func LockDatabase(string) (*os.File, error) { return nil, nil }

func LockDatabaseExclusive(string) (*os.File, error) { return nil, nil }

func LockServing(string) (*os.File, error) { return nil, nil }
