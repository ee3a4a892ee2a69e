//go:build unix

package store

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// walIndex is the start of a database's -shm file mapped read-only: the
// WAL-index header SQLite updates, in native byte order, at every commit.
// The mapping stays valid while SQLite runs: it never shrinks the file
// below its first page while a connection (the store's writer) has it
// open, and an unlinked file keeps its pages. Requests still in flight when
// the store closes may read after close: the lock keeps them off the
// unmapped page (a read there would crash the process).
//
// The descriptor stays open until the store's connections are closed:
// closing any descriptor of a file drops every POSIX lock the process holds
// on it, SQLite's own locks on the -shm included, and without them another
// process opening the database rebuilds the WAL index under the server.
type walIndex struct {
	mu  sync.RWMutex
	f   *os.File
	mem []byte // nil once closed
}

// walIndexHeader is the size of the WAL-index header; iChange is at byte 8.
const walIndexHeader = 48

func openWALIndex(path string) (*walIndex, error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil {
		f.Close()
		return nil, err
	} else if fi.Size() < walIndexHeader {
		f.Close()
		return nil, errors.New("the -shm file holds no WAL-index header")
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, walIndexHeader, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &walIndex{f: f, mem: mem}, nil
}

// iChange is the header's commit counter; a 32-bit aligned load, so never
// torn by a concurrent commit. False once closed, which the watch takes for
// a change.
func (w *walIndex) iChange() (uint32, bool) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.mem == nil {
		return 0, false
	}
	return atomic.LoadUint32((*uint32)(unsafe.Pointer(&w.mem[8]))), true
}

// close unmaps the header and closes the descriptor; call it only once
// SQLite's connections are closed (see walIndex).
func (w *walIndex) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mem != nil {
		syscall.Munmap(w.mem)
		w.mem = nil
		w.f.Close()
	}
}
