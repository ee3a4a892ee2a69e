package main

import (
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecondServerRefused: a second dialbox on a database another one is
// serving stops at start with a clear message (it would dial every contact
// twice), and the first keeps serving.
func TestSecondServerRefused(t *testing.T) {
	first := startServer(t, testFixtures)
	second := NewMain(io.Discard)
	second.Config.Listen = "127.0.0.1:0"
	second.Config.Database = first.db
	err := second.Run(t.Context())
	if err == nil {
		second.Close()
		t.Fatal("a second server started on a database already served")
	}
	if !strings.Contains(err.Error(), "already served by another dialbox") {
		t.Errorf("unclear error: %v", err)
	}
	if status, body := first.do(t, "GET", pathB, "Bearer "+mintFor(t, first, "qa-key"), ""); status != 200 {
		t.Errorf("first server after the refused start: %d %s", status, body)
	}
}

// TestDatabaseFileIsPrivate: the database holds phone numbers and secrets,
// so it is created readable by its owner only.
func TestDatabaseFileIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "private.db")
	s, err := store.OpenSQLite(path, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, s, path)
	defer s.Close()
	for _, name := range []string{path, path + "-wal"} {
		if mode := fileMode(t, name); mode != 0o600 {
			t.Errorf("%s has mode %o, want 600", filepath.Base(name), mode)
		}
	}
}

func fileMode(t *testing.T, name string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}
