//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestStoreKeepsSQLiteLocksOnSHM: SQLite holds POSIX locks on the -shm file
// for as long as a connection is open, and closing ANY descriptor of that
// file in the process drops them all. The WAL-index watch (internal/store/catalog_watch.go)
// opened the -shm and closed it again; a sqlite3 session or another
// dialbox command opening the database then rebuilt the WAL index under
// the server ("database disk image is malformed"). The store must still
// hold SQLite's locks after it opened.
func TestStoreKeepsSQLiteLocksOnSHM(t *testing.T) {
	s, path := openTestStore(t)
	if _, err := s.AppByKey(context.Background(), "nobody"); err == nil {
		t.Fatal("unexpected app")
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path+"-shm", &st); err != nil {
		t.Fatal(err)
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skip("no /proc/locks:", err)
	}
	// /proc/locks lines: "1: POSIX  ADVISORY  READ 1234 08:01:5678 128 128"
	want := fmt.Sprintf(" %d ", os.Getpid())
	inode := fmt.Sprintf(":%d ", st.Ino)
	for _, line := range strings.Split(string(locks), "\n") {
		if strings.Contains(line, "POSIX") && strings.Contains(line, want) && strings.Contains(line, inode) {
			return
		}
	}
	t.Fatalf("no POSIX lock of this process on %s-shm (inode %d):\n%s", path, st.Ino, locks)
}
