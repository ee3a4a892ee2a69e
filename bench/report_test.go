package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplaceBetween(t *testing.T) {
	doc := "# Title\n\nHand-written analysis.\n\n" + figuresBegin + "\nold figures\n" + figuresEnd +
		"\n\n## Profiles\n\n" + profilesBegin + "\nold lists\n" + profilesEnd + "\n\nAfter.\n"

	got, err := replaceBetween(doc, figuresBegin, figuresEnd, "\nnew figures\n\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Title\n\nHand-written analysis.\n\n" + figuresBegin + "\nnew figures\n" + figuresEnd +
		"\n\n## Profiles\n\n" + profilesBegin + "\nold lists\n" + profilesEnd + "\n\nAfter.\n"
	if got != want {
		t.Errorf("figures rewritten:\n%s\nwant:\n%s", got, want)
	}
	// Rewriting again with the same body changes nothing.
	if again, _ := replaceBetween(got, figuresBegin, figuresEnd, "new figures"); again != got {
		t.Errorf("not idempotent:\n%s", again)
	}

	got, err = replaceBetween(doc, profilesBegin, profilesEnd, "new lists\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, profilesBegin+"\nnew lists\n"+profilesEnd) || !strings.Contains(got, "\nold figures\n") {
		t.Errorf("profiles rewritten:\n%s", got)
	}
}

func TestReplaceBetweenRefusesBrokenMarkers(t *testing.T) {
	for name, doc := range map[string]string{
		"no begin":      "text\n" + figuresEnd + "\n",
		"no end":        figuresBegin + "\ntext\n",
		"end first":     figuresEnd + "\ntext\n" + figuresBegin + "\n",
		"begin twice":   figuresBegin + "\n" + figuresBegin + "\n" + figuresEnd + "\n",
		"neither":       "# nothing to write into\n",
		"end twice too": figuresBegin + "\n" + figuresEnd + "\n" + figuresEnd + "\n",
	} {
		if out, err := replaceBetween(doc, figuresBegin, figuresEnd, "body"); err == nil {
			t.Errorf("%s: no error, wrote:\n%s", name, out)
		}
	}
}

func TestWriteBetween(t *testing.T) {
	path := filepath.Join(t.TempDir(), "benchmarks.md")
	if err := writeBetween(path, figuresBegin, figuresEnd, "first\n"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	page := strings.Replace(string(b), figuresEnd, figuresEnd+"\n\nAnalysis kept.", 1)
	os.WriteFile(path, []byte(page), 0o644)
	if err := writeBetween(path, figuresBegin, figuresEnd, "second\n"); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if got := string(b); !strings.Contains(got, figuresBegin+"\nsecond\n"+figuresEnd) || strings.Contains(got, "first") ||
		!strings.Contains(got, "Analysis kept.") {
		t.Errorf("page after the second run:\n%s", got)
	}
	if err := writeBetween(path, profilesBegin, profilesEnd, "lists"); err == nil {
		t.Error("a page without the profile markers was written into")
	}
}

// The page the harness writes by default has both pairs of markers, so a
// run (plain or -cpuprofile) can write into it.
func TestBenchmarksPageHasMarkers(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "docs", "benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range [][2]string{{figuresBegin, figuresEnd}, {profilesBegin, profilesEnd}} {
		if _, err := replaceBetween(string(b), m[0], m[1], "x"); err != nil {
			t.Errorf("docs/benchmarks.md: %v", err)
		}
	}
}
