package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"dialbox/internal/admin"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/pgtest"
	"dialbox/internal/store"
	"github.com/jackc/pgx/v5/pgxpool"
)

// cliRun runs `dialbox args... --database db` in-process and returns what
// it printed and its error.
func cliRun(db string, args ...string) (string, error) {
	var out bytes.Buffer
	err := run(context.Background(), append(args, "--database", db), &out, nil)
	return out.String(), err
}

func TestCLIAppCreateNeedsName(t *testing.T) { eachBackend(t, testCLIAppCreateNeedsName) }

func testCLIAppCreateNeedsName(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	_, err := cliRun(s.db, "app", "create", "--api-key", "nameless")
	if err == nil || !strings.Contains(err.Error(), "--name NAME is required") {
		t.Fatalf("app create without --name: %v", err)
	}
	s.adminFail(t, "GET", "/apps/nameless", "", 404)
}

// TestCLIAdminCommands: the CLI's counterparts of the admin API change the
// database under a running server, which sees each change at its next
// request.
func TestCLIAdminCommands(t *testing.T) { eachBackend(t, testCLIAdminCommands) }

func testCLIAdminCommands(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	cli := func(args ...string) string {
		t.Helper()
		out, err := cliRun(s.db, args...)
		if err != nil {
			t.Fatalf("dialbox %s: %v", strings.Join(args, " "), err)
		}
		return out
	}
	cliFails := func(want string, args ...string) {
		t.Helper()
		if _, err := cliRun(s.db, args...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("dialbox %s: %v, want an error saying %q", strings.Join(args, " "), err, want)
		}
	}
	publicB := func() int {
		t.Helper()
		_, e := s.public(t, "qa-key", "qa-secret", "GET", pathB, "")
		return e.Code
	}

	// disable, enable
	if code := publicB(); code != 0 {
		t.Fatalf("operation B before: code %d", code)
	}
	if out := cli("app", "disable", "--app", "qa-key"); !strings.Contains(out, "disabled: true") {
		t.Errorf("app disable:\n%s", out)
	}
	seenAfter(t, backend, "the application disabled (operation B answers it is not found)", func() bool { return publicB() == httpx.ErrAppNotFound.Code })
	if out := cli("app", "enable", "--app", "qa-key"); !strings.Contains(out, "disabled: false") {
		t.Errorf("app enable:\n%s", out)
	}
	seenAfter(t, backend, "the application enabled (operation B answers)", func() bool { return publicB() == 0 })

	// wallet
	if out := cli("wallet", "show", "--app", "qa-key"); !strings.Contains(out, "balance:          1000000\n") ||
		!strings.Contains(out, "expires_at:       2099-01-01T00:00:00Z\n") {
		t.Errorf("wallet show:\n%s", out)
	}
	if out := cli("wallet", "top-up", "--app", "qa-key", "--amount", "5000"); !strings.Contains(out, "balance:          1005000\n") {
		t.Errorf("wallet top-up:\n%s", out)
	}
	seenAfter(t, backend, "the CLI's top-up", func() bool {
		var w domain.Wallet
		s.admin(t, "GET", "/apps/qa-key/wallet", "", &w)
		return w.Balance == 1_005_000
	})
	cliFails("--amount is required and must be a positive number of VND", "wallet", "top-up", "--app", "qa-key", "--amount", "0")
	cliFails("--amount is required", "wallet", "top-up", "--app", "qa-key")
	cliFails(`no application has API key "nobody"`, "wallet", "show", "--app", "nobody")

	// scenario submit, approve: the admin API's transitions and words
	scenario := func() string {
		t.Helper()
		var sc admin.Scenario
		s.admin(t, "GET", "/apps/qa-key/scenarios/sc-cli", "", &sc)
		return sc.Status
	}
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"sc-cli","content":"x"}`, nil)
	if st := scenario(); st != domain.StatusDraft {
		t.Fatalf("new scenario %s", st)
	}
	cliFails("Cannot approve a scenario in status DRAFT (only from REVIEWING)", "scenario", "approve", "--app", "qa-key", "--scenario", "sc-cli")
	if out := cli("scenario", "submit", "--app", "qa-key", "--scenario", "sc-cli"); !strings.Contains(out, "status: REVIEWING") {
		t.Errorf("scenario submit:\n%s", out)
	}
	seenAfter(t, backend, "the CLI's submit", func() bool { return scenario() == domain.StatusReviewing })
	cli("scenario", "approve", "--app", "qa-key", "--scenario", "sc-cli")
	seenAfter(t, backend, "the CLI's approve", func() bool { return scenario() == domain.StatusActive })
	adminWords := s.adminFail(t, "POST", "/apps/qa-key/scenarios/sc-cli/approve", "", 409).Message
	cliFails(adminWords, "scenario", "approve", "--app", "qa-key", "--scenario", "sc-cli")
	cliFails(s.adminFail(t, "POST", "/apps/qa-key/scenarios/nope/submit", "", 404).Message,
		"scenario", "submit", "--app", "qa-key", "--scenario", "nope")
	cliFails("--scenario ID is required", "scenario", "submit", "--app", "qa-key")

	// delete
	s.admin(t, "GET", "/apps/other-key", "", nil)
	if out := cli("app", "delete", "--app", "other-key"); out != "deleted: other-key\n" {
		t.Errorf("app delete: %q", out)
	}
	seenAfter(t, backend, "the CLI's delete", func() bool {
		status, _ := s.do(t, "GET", "/admin/v1/apps/other-key", adminAuth, "")
		return status == 404
	})
	cliFails(`no application has API key "other-key"`, "app", "delete", "--app", "other-key")
	cliFails("--app API_KEY is required", "app", "disable")

	var help bytes.Buffer
	run(context.Background(), []string{"help"}, &help, nil)
	for _, line := range []string{"app disable|enable|delete --app API_KEY", "wallet show --app API_KEY",
		"wallet top-up --app API_KEY --amount VND", "scenario submit|approve --app API_KEY --scenario ID"} {
		if !strings.Contains(help.String(), line) {
			t.Errorf("dialbox help does not show %q", line)
		}
	}
}

// Commands that read or change data need an existing dialbox database: a
// mistyped --database is an error naming it, and creates nothing; only
// serve creates a database (docs/operations.md#which-commands-create-the-database).
// On PostgreSQL, a database without dialbox's schema is refused alike.
func TestCommandsNeedAnExistingDatabase(t *testing.T) {
	eachBackend(t, testCommandsNeedAnExistingDatabase)
}

func testCommandsNeedAnExistingDatabase(t *testing.T, backend string) {
	dir := t.TempDir()
	db := filepath.Join(dir, "typo.db")
	if backend == "postgres" {
		db = pgtest.Database(t) // exists, but empty
	}
	contacts := writeFile(t, "contacts.csv", "phone_number\n0912345678\n")
	register := writeFile(t, "register.txt", "0912345678\n")
	for _, args := range [][]string{
		{"app", "list"},
		{"app", "create", "--name", "typo"},
		{"wallet", "show", "--app", "qa-key"},
		{"scenario", "list", "--app", "qa-key"},
		{"contacts", "list", "--app", "qa-key"},
		{"token", "--app", "qa-key"},
		{"import", "--scenario", "sc", contacts},
		{"dnc", "count"},
		{"dnc", "import", register},
		{"dnc", "add", "0912345678"},
	} {
		_, err := cliRun(db, args...)
		if want := "dialbox serve"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), store.Redacted(db)) {
			t.Errorf("dialbox %s on %s: %v; want an error naming the database and %q", strings.Join(args, " "), backend, err, want)
		}
	}
	if backend == "sqlite" {
		if left, _ := filepath.Glob(db + "*"); len(left) > 0 {
			t.Errorf("the commands left %v", left)
		}
		return
	}
	pool, err := pgxpool.New(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var tables int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the commands made %d tables in the empty database (%v)", tables, err)
	}
}

// A database made by serve is one the commands work on, and an empty
// SQLite file (not a dialbox database) is refused as a mistyped one is.
func TestCommandsRefuseAFileThatIsNotADatabase(t *testing.T) {
	empty := writeFile(t, "empty.db", "")
	if _, err := cliRun(empty, "app", "list"); err == nil || !strings.Contains(err.Error(), "not a dialbox database") {
		t.Errorf("app list on an empty file: %v", err)
	}
	if b, _ := os.ReadFile(empty); len(b) != 0 {
		t.Errorf("app list wrote %d bytes into the empty file", len(b))
	}
}
