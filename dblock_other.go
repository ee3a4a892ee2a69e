//go:build !unix

package main

import "os"

// Without flock the database is not guarded against restore while in use:
// stop dialbox before `dialbox restore` (docs/operations.md#backup-and-restore).
func lockDatabase(string) (*os.File, error) { return nil, nil }

func lockDatabaseExclusive(string) (*os.File, error) { return nil, nil }

func lockServing(string) (*os.File, error) { return nil, nil }
