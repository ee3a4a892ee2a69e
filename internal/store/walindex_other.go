//go:build !unix

package store

import (
	"encoding/binary"
	"os"
)

// walIndex reads the WAL-index header of a database's -shm file (see
// walindex_unix.go) with a positioned read, where mmap is not at hand.
type walIndex struct{ f *os.File }

func openWALIndex(path string) (*walIndex, error) {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return nil, err
	}
	return &walIndex{f: f}, nil
}

// iChange is the header's commit counter; false when it cannot be read,
// which the watch takes for a change.
func (w *walIndex) iChange() (uint32, bool) {
	var b [4]byte
	if _, err := w.f.ReadAt(b[:], 8); err != nil {
		return 0, false
	}
	return binary.NativeEndian.Uint32(b[:]), true
}

func (w *walIndex) Close() { w.f.Close() }
