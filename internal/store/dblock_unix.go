//go:build unix

package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// LockDatabase takes a shared advisory lock on path's lock file (path +
// ".lock") for as long as the returned file is open. Every command that
// opens the database holds one, so restore, which needs it exclusively, can
// tell that a running dialbox holds the database. A separate file, not the
// database itself, so the lock never meets SQLite's own locks.
func LockDatabase(path string) (*os.File, error) {
	return flockFile(path, syscall.LOCK_SH, "database %s is being restored (dialbox restore holds %s); try again when it is done")
}

// LockDatabaseExclusive is restore's lock: it fails while anything else
// has the database open.
func LockDatabaseExclusive(path string) (*os.File, error) {
	return flockFile(path, syscall.LOCK_EX, "database %s is in use by a running dialbox (it holds %s); stop it first, e.g. systemctl stop dialbox")
}

func flockFile(path string, how int, busy string) (*os.File, error) {
	name := path + ".lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf(busy, path, name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f, nil
}

// LockServing is held by `dialbox serve` for its whole run: a second server
// on the same database would dial every contact twice, so it must not start.
func LockServing(path string) (*os.File, error) {
	name := path + ".serve.lock"
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("database %s is already served by another dialbox (it holds %s); stop it or use another --database", path, name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f, nil
}
