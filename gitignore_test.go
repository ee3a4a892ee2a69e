package main

import (
	"bytes"
	"context"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitignoreCoversARun: every file a run leaves beside its database (the
// database, its WAL and lock files, a backup, what restore keeps) matches a
// pattern of .gitignore, so a run in the working tree leaves it clean.
func TestGitignoreCoversARun(t *testing.T) {
	data, err := os.ReadFile(".gitignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.Lines(string(data)) {
		if p := strings.TrimSpace(line); p != "" && !strings.HasPrefix(p, "#") && !strings.Contains(p, "/") {
			patterns = append(patterns, p)
		}
	}

	dir := t.TempDir()
	db := filepath.Join(dir, "dialbox.db")
	m, _ := startDemoMain(t, db)
	dialbox := func(args ...string) {
		t.Helper()
		if err := run(context.Background(), append(args, "--database", db), &bytes.Buffer{}, nil); err != nil {
			t.Fatalf("dialbox %v: %v", args, err)
		}
	}
	dialbox("backup", filepath.Join(dir, "dialbox-backup.db"))
	m.Close()
	dialbox("restore", filepath.Join(dir, "dialbox-backup.db"))
	m, _ = startDemoMain(t, db)
	defer m.Close()

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		ignored := false
		for _, p := range patterns {
			if ok, _ := path.Match(p, e.Name()); ok {
				ignored = true
			}
		}
		if !ignored {
			t.Errorf("%s is left beside the database and not in .gitignore", e.Name())
		}
	}
}
