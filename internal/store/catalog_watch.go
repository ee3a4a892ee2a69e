package store

import (
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
)

// CommitWatch lets the configuration cache see commits made by other
// connections to the database: another process (`dialbox app create`, a
// restore tool, sqlite3) writes beside a running server, and the next
// request must see it.
//
// The signal is iChange, the counter in SQLite's WAL-index header (the
// -shm file every connection of every process maps; "incremented with each
// transaction", SQLite's WAL file format). Reading it is one load from
// shared memory (about 2 ns), where a per-request `PRAGMA data_version` on a
// dedicated connection costs about 10 µs, more than the whole of a cached
// operation B, and a pread of the -shm about 1.3 µs (measured on this
// tree's 2-core machine).
//
// The counter also moves with this process's own commits, which must leave
// the cache alone when they change no configuration (imports, calls). So
// the writer accounts for its own commits: it opens one (open) just
// before COMMIT and closes it once it has recorded the counter after it,
// and only then asks its connection's `PRAGMA data_version`, which changes
// only when ANOTHER connection committed (in the moment after COMMIT
// released the lock). A request that finds the counter moved waits until
// the open commit is closed; if the counter is still not the recorded
// value, some other connection committed, and the cache is dropped. The
// writer never waits for the requests: with a lock in their place it
// spent a tenth of its time waiting for readers of it to run again
// (docs/benchmarks.md#the-garbage-collector).
type CommitWatch struct {
	shm  *walIndex
	seen atomic.Uint32 // iChange at which every commit is accounted for
	// open is the writer's commit in progress, from just before COMMIT
	// until the writer has accounted for it, when it is closed (nil
	// between commits).
	mu   sync.Mutex
	open chan struct{}

	// The writer goroutine's only: PRAGMA data_version on its connection
	// and the value it last gave.
	dataVersion     *sql.Stmt
	lastDataVersion int64
}

// OpenCommitWatch maps the WAL-index of the database at path, whose schema
// the writer connection write has already read (so the -shm file exists).
func OpenCommitWatch(path string, write *sql.DB) (*CommitWatch, error) {
	shm, err := openWALIndex(path)
	if err != nil {
		return nil, fmt.Errorf("database %s: WAL index: %w", path, err)
	}
	w := &CommitWatch{shm: shm}
	if w.dataVersion, err = write.Prepare(`PRAGMA data_version`); err == nil {
		err = w.dataVersion.QueryRow().Scan(&w.lastDataVersion)
	}
	if err != nil {
		w.CloseStatement()
		w.Close()
		return nil, err
	}
	if v, ok := shm.iChange(); ok {
		w.seen.Store(v)
	}
	return w, nil
}

// CloseStatement closes the statement on the writer's connection, before
// that connection closes.
func (w *CommitWatch) CloseStatement() {
	if w != nil && w.dataVersion != nil {
		w.dataVersion.Close()
	}
}

// close releases the WAL index, once the store's connections are closed
// (walindex_unix.go says why not before).
func (w *CommitWatch) Close() {
	if w != nil {
		w.shm.Close()
	}
}

// check counts a change in changes if a connection other than this store's
// writer committed since the last check. It runs before every cached read.
func (w *CommitWatch) Check(changes *atomic.Uint64) {
	for {
		if v, ok := w.shm.iChange(); ok && v == w.seen.Load() {
			return
		}
		// Moved: by the writer (then it accounts for it before it closes
		// open) or by someone else. Under mu with no commit open, the
		// writer cannot begin one: what moved it now is someone else.
		w.mu.Lock()
		open := w.open
		if open == nil {
			if v, ok := w.shm.iChange(); !ok || v != w.seen.Load() {
				changes.Add(1)
				if ok {
					w.seen.Store(v)
				}
			}
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
		<-open
	}
}

// Committing is called by the writer just before COMMIT; Committed, which
// must follow, records the commit's counter and counts a change in changes
// if another connection committed meanwhile.
func (w *CommitWatch) Committing() {
	w.mu.Lock()
	w.open = make(chan struct{})
	w.mu.Unlock()
}

func (w *CommitWatch) Committed(changes *atomic.Uint64) {
	defer func() {
		w.mu.Lock()
		close(w.open)
		w.open = nil
		w.mu.Unlock()
	}()
	// The counter first: data_version, read after it, then covers any
	// other connection's commit up to the moment the counter was read.
	v, ok := w.shm.iChange()
	var dv int64
	if err := w.dataVersion.QueryRow().Scan(&dv); err != nil || dv != w.lastDataVersion || !ok {
		changes.Add(1)
	}
	w.lastDataVersion = dv
	if ok {
		w.seen.Store(v)
	}
}
