package main

import (
	"dialbox/internal/config"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The docs are checked like code: a link to a page or heading that is not
// there, a README that no longer opens with the two commands, or a config
// key nobody documented fails the build.

// docPages are the pages checked: the README and every page of docs/.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(root, "README.md")}, pages...)
}

func TestDocsLinksResolve(t *testing.T) {
	for _, p := range checkDocLinks(docPages(t, ".")) {
		t.Error(p)
	}
}

// TestDocsLinkCheckerFindsBrokenLinks proves the checker above can fail: a
// missing file, a missing heading in another page and in the same page.
func TestDocsLinkCheckerFindsBrokenLinks(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), []byte("# A\n\n## Good heading\n\n"+
		"[ok](b.md#the-heading) [ok](#good-heading) [ok](https://example.com/x.md)\n"+
		"[gone](missing.md) [bad](b.md#no-such-heading) [bad](#nor-here)\n"+
		"```\n[in a code block](ignored.md)\n```\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.md"), []byte("# B\n\n## The heading\n"), 0o644)
	got := checkDocLinks([]string{filepath.Join(dir, "a.md"), filepath.Join(dir, "b.md")})
	if len(got) != 3 {
		t.Fatalf("want 3 problems (missing.md, b.md#no-such-heading, #nor-here), got %d: %q", len(got), got)
	}
	for i, want := range []string{"missing.md", "b.md#no-such-heading", "#nor-here"} {
		if !strings.Contains(got[i], want) {
			t.Errorf("problem %d = %q, want it to name %s", i, got[i], want)
		}
	}
}

func TestHeadingAnchors(t *testing.T) {
	for heading, want := range map[string]string{
		"Every code, and when it is answered":     "every-code-and-when-it-is-answered",
		"3. Force any error":                      "3-force-any-error",
		"Operation B's parameters":                "operation-bs-parameters",
		"`contact_id` is a UUIDv7":                "contact_id-is-a-uuidv7",
		"Retries: re_call":                        "retries-re_call",
		"Calling: the engine":                     "calling-the-engine",
		"Where the time goes (CPU profiles)":      "where-the-time-goes-cpu-profiles",
		"Configuration: file, environment, flags": "configuration-file-environment-flags",
	} {
		if got := headingAnchor(heading); got != want {
			t.Errorf("headingAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
	got := anchorsOf("# T\n\n## Notes\n\n```\n# not a heading\n```\n\n### Notes\n")
	for _, a := range []string{"t", "notes", "notes-1"} {
		if !got[a] {
			t.Errorf("anchors %v lack %q", got, a)
		}
	}
	if got["not-a-heading"] {
		t.Error("a line in a code block was taken for a heading")
	}
}

func TestREADMEOpensWithTheTwoCommands(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	if n := len(lines); n > 260 {
		t.Errorf("README.md has %d lines; keep it under ~250 and put the rest in docs/", n)
	}
	head := strings.Join(lines[:min(40, len(lines))], "\n")
	for _, cmd := range []string{"go run .", "go test ./..."} {
		if !strings.Contains(head, cmd) {
			t.Errorf("README.md does not show %q within its first 40 lines", cmd)
		}
	}
}

// TestConfigKeysDocumented: every key of Config has a row in
// docs/configuration.md, so a new setting cannot ship undocumented.
func TestConfigKeysDocumented(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	cfg := config.DefaultConfig()
	n := 0
	config.WalkKeys(reflect.ValueOf(&cfg).Elem(), "", func(key string, _ reflect.Value) error {
		n++
		if !strings.Contains(page, "| `"+key+"` |") {
			t.Errorf("docs/configuration.md has no row for %s", key)
		}
		return nil
	})
	if n < 30 {
		t.Fatalf("only %d config keys found; is walkKeys still the way to list them?", n)
	}
}

var (
	mdLink  = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	mdFence = regexp.MustCompile("^\\s*(```|~~~)")
)

// checkDocLinks returns one line per relative link of the pages that
// names a missing file or a heading its page does not have.
func checkDocLinks(pages []string) []string {
	var problems []string
	anchors := map[string]map[string]bool{}
	anchorsIn := func(path string) (map[string]bool, bool) {
		if a, ok := anchors[path]; ok {
			return a, true
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, false
		}
		anchors[path] = anchorsOf(string(b))
		return anchors[path], true
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for i, line := range proseLines(string(b)) {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				file, anchor, _ := strings.Cut(target, "#")
				path := page
				if file != "" {
					path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				}
				where := page + ":" + strconv.Itoa(i+1) + ": " + target
				if _, err := os.Stat(path); err != nil {
					problems = append(problems, where+": no such file")
					continue
				}
				if anchor == "" {
					continue
				}
				if !strings.HasSuffix(path, ".md") {
					problems = append(problems, where+": an anchor into a file that is not markdown")
					continue
				}
				if a, ok := anchorsIn(path); !ok || !a[anchor] {
					problems = append(problems, where+": no heading with that anchor")
				}
			}
		}
	}
	return problems
}

// proseLines is the page's lines with those of fenced code blocks blanked,
// so line numbers stay right and code is not read as links or headings.
func proseLines(doc string) []string {
	lines := strings.Split(doc, "\n")
	in := false
	for i, l := range lines {
		if mdFence.MatchString(l) {
			in = !in
			lines[i] = ""
		} else if in {
			lines[i] = ""
		}
	}
	return lines
}

// anchorsOf lists the anchors GitHub gives the page's headings; a repeated
// heading gets -1, -2, ...
func anchorsOf(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(doc) {
		t := strings.TrimLeft(l, "#")
		if len(t) == len(l) || len(l)-len(t) > 6 || !strings.HasPrefix(t, " ") {
			continue
		}
		a := headingAnchor(strings.TrimSpace(t))
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// headingAnchor is GitHub's anchor for a heading: lower case, spaces to
// "-", every other character but letters, digits, "-" and "_" dropped.
func headingAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestArchitectureNamesEveryFile: the file map of docs/architecture.md names
// every source file of the root package and every package under internal/,
// so a newcomer finds each one there.
func TestArchitectureNamesEveryFile(t *testing.T) {
	page, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			want = append(want, f)
		}
	}
	pkgs, _ := filepath.Glob("internal/*")
	want = append(want, pkgs...)
	for _, name := range want {
		if !strings.Contains(string(page), "`"+name+"`") {
			t.Errorf("docs/architecture.md does not name `%s`", name)
		}
	}
}

// TestPackageImportsFollowTheMap: each package under internal/ imports
// only the dialbox packages its row of docs/architecture.md's package map
// allows, so the map stays the truth about which way dependencies run.
func TestPackageImportsFollowTheMap(t *testing.T) {
	page, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]map[string]bool{} // package path -> imports allowed
	row := regexp.MustCompile("^\\| `(internal/[a-z0-9/]+)` \\|.*\\| ([^|]*) \\|$")
	name := regexp.MustCompile("`([a-z0-9/]+)`")
	for _, line := range strings.Split(string(page), "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		may := map[string]bool{}
		for _, n := range name.FindAllStringSubmatch(m[2], -1) {
			may["dialbox/internal/"+strings.TrimPrefix(n[1], "internal/")] = true
		}
		allowed[m[1]] = may
	}
	dirs, _ := filepath.Glob("internal/*")
	more, _ := filepath.Glob("internal/*/*")
	fset := token.NewFileSet()
	for _, dir := range append(dirs, more...) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		if len(files) == 0 {
			continue
		}
		may, ok := allowed[dir]
		if !ok {
			t.Errorf("docs/architecture.md's package map has no row for `%s`", dir)
			continue
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if strings.HasPrefix(path, "dialbox/") && !may[path] && !strings.HasPrefix(path, "dialbox/"+dir+"/") {
					t.Errorf("%s imports %s, which the package map does not allow `%s`", f, path, dir)
				}
			}
		}
	}
}
