package main

import (
	"bytes"
	"context"
	"dialbox/internal/config"
	"dialbox/internal/store"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

const importFixtures = `
[[applications]]
name = "Import tenant"
api_key = "imp-key"
api_secret = "imp-secret"
  [applications.wallet]
  prepaid = false
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000001"]
  [[applications.scenarios]]
  id = "sc-unique"
  status = "ACTIVE"
  content = "Xin chào {{ho_ten}}"
  personalized_fields = ["ho_ten", "danh_xung"]
  [[applications.scenarios]]
  id = "sc-empty"
  status = "ACTIVE"
  content = ""
  [[applications.campaigns]]
  id = "camp-1"
  scenario_id = "sc-unique"

[[applications]]
name = "Other tenant"
api_key = "other-key"
api_secret = "other-secret"
`

// importDB makes a database of the backend holding importFixtures and
// returns it as `database` names it.
func importDB(t *testing.T, backend string) string {
	t.Helper()
	db := backendDatabase(t, backend)
	store := openDatabase(t, db)
	defer store.Close()
	applyTestFixtures(t, store, importFixtures, time.Now())
	return db
}

// openDatabase opens the store `database` names, as the CLI does; the
// caller closes it.
func openDatabase(t *testing.T, database string) Store {
	t.Helper()
	store, err := openConfiguredStore(context.Background(), configOn(database), store.NewMetrics(config.IsPostgresURL(database)))
	if err != nil {
		t.Fatal(err)
	}
	opened(t, store, database)
	return store
}

func TestImportCommand(t *testing.T) { eachBackend(t, testImportCommand) }

func testImportCommand(t *testing.T, backend string) {
	db := importDB(t, backend)
	csvPath := filepath.Join(t.TempDir(), "contacts.csv")
	os.WriteFile(csvPath, []byte("\ufeffphone_number,ho_ten,ghi_chu\n"+
		"0912345678,Nguyen Van A,vip\n"+ // row 2: added
		"not a phone,Tran B,\n"+ // row 3: invalid
		"84987654321,Pham D\n"+ // row 4: added, short row
		"0987654321,Pham D again,\n"+ // row 5: repeats row 4 in its chunk
		"+84 912 345 678,Le C,\n"), 0o600) // row 6: row 2's phone, queued by an earlier chunk
	var out bytes.Buffer
	args := []string{"import", "--database", db, "--app", "imp-key", "--campaign", "camp-1", "--chunk", "2", csvPath}
	if err := run(context.Background(), args, &out, nil); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "5 rows read, 2 contacts added, 3 skipped") {
		t.Errorf("summary: %s", out.String())
	}
	f, err := os.Open(filepath.Join(filepath.Dir(csvPath), "contacts.skipped.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the skipped-rows file holds phone numbers but has mode %v (%v), want 600", info.Mode().Perm(), err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"row", "reason", "phone_number", "ho_ten", "ghi_chu"},
		{"3", "", "not a phone", "Tran B", ""},
		{"5", "phone_number repeats an earlier contact of this request", "0987654321", "Pham D again", ""},
		{"6", "phone_number is already queued for this scenario", "+84 912 345 678", "Le C", ""},
	}
	if len(rows) != len(want) {
		t.Fatalf("skipped rows:\n%v", rows)
	}
	for i := range want {
		got := append([]string(nil), rows[i]...)
		if i == 1 && got[1] != "" { // the phone parser's wording is its own
			got[1] = ""
		}
		if strings.Join(got, "|") != strings.Join(want[i], "|") {
			t.Errorf("skipped row %d = %q, want %q", i, rows[i], want[i])
		}
	}

	store := openDatabase(t, db)
	app, _ := store.AppByKey(context.Background(), "imp-key")
	ids := contactIDs(t, store, app.ID)
	store.Close()
	if len(ids) != 2 {
		t.Errorf("%d contacts stored, want 2", len(ids))
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--app", "imp-key", "--scenario", "sc-empty"}, "1208 Scenario content is empty"},
		{[]string{"--app", "imp-key", "--scenario", "nope"}, "3001 Scenario is not found"},
		{[]string{"--app", "imp-key", "--campaign", "nope"}, "404 Campaign is not found"},
		{[]string{"--app", "other-key", "--scenario", "sc-unique"}, "3001 Scenario is not found"},
		{[]string{"--scenario", "sc-unique"}, "name one with --app"},
	} {
		args := append(append([]string{"import", "--database", db}, c.args...), csvPath)
		err := run(context.Background(), args, io.Discard, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("import %v: %v, want %q", c.args, err, c.want)
		}
	}
	noPhone := filepath.Join(filepath.Dir(csvPath), "nophone.csv")
	os.WriteFile(noPhone, []byte("phone,name\n0912345678,A\n"), 0o600)
	if err := run(context.Background(), []string{"import", "--database", db, "--app", "imp-key", "--scenario", "sc-unique", noPhone}, io.Discard, nil); err == nil ||
		!strings.Contains(err.Error(), "no phone_number column") {
		t.Errorf("file without phone_number: %v", err)
	}
}

// A row over the contact size limits is a skipped row with its reason, in
// the file only, in row order with the others: the database stores nothing
// of it, and the rows beside it in its chunk are imported.
func TestImportContactSizeLimits(t *testing.T) { eachBackend(t, testImportContactSizeLimits) }

func testImportContactSizeLimits(t *testing.T, backend string) {
	db := importDB(t, backend)
	csvPath := filepath.Join(t.TempDir(), "contacts.csv")
	big := strings.Repeat("x", 1025)
	os.WriteFile(csvPath, []byte("phone_number,ho_ten,ghi_chu\n"+
		"0912345678,Nguyen Van A,vip\n"+ // row 2: added
		"not a phone,Tran B,ok\n"+ // row 3: skipped by the importer
		"0912345679,Le C,"+big+"\n"+ // row 4: a field over 1 KB
		"not a phone,Le C,"+big+"\n"+ // row 5: over it too, whatever else is wrong
		"0912345680,Pham D,ok\n"), 0o600) // row 6: added
	var out bytes.Buffer
	args := []string{"import", "--database", db, "--app", "imp-key", "--scenario", "sc-unique", "--chunk", "3", csvPath}
	if err := run(context.Background(), args, &out, nil); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "5 rows read, 2 contacts added, 3 skipped") {
		t.Errorf("summary: %s", out.String())
	}
	f, err := os.Open(filepath.Join(filepath.Dir(csvPath), "contacts.skipped.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	reason := "ghi_chu is 1025 bytes, more than limits.max_contact_field_bytes (1024)"
	want := [][]string{
		{"row", "reason", "phone_number", "ho_ten", "ghi_chu"},
		{"3", "", "not a phone", "Tran B", "ok"},
		{"4", reason, "0912345679", "Le C", big},
		{"5", reason, "not a phone", "Le C", big},
	}
	if len(rows) > 1 && rows[1][1] != "" { // the phone parser's wording is its own
		rows[1][1] = ""
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("skipped rows:\n%.500q\nwant\n%.500q", rows, want)
	}
	store := openDatabase(t, db)
	defer store.Close()
	if n := queryInt(t, store, `SELECT count(*) FROM contacts`); n != 2 {
		t.Errorf("%d contacts stored, want 2", n)
	}
	// The importer's own skip is stored, for the admin API; the others not.
	if n := queryInt(t, store, `SELECT count(*) FROM skipped_contacts`); n != 1 {
		t.Errorf("%d skipped contacts stored, want 1", n)
	}
}

// TestImportWhileServing imports into the database of a running server,
// naming no application (the demo tenant is the only one).
func TestImportWhileServing(t *testing.T) { eachBackend(t, testImportWhileServing) }

func testImportWhileServing(t *testing.T, backend string) {
	m, _ := startOpsServerOn(t, backendDatabase(t, backend), io.Discard)
	csvPath := filepath.Join(t.TempDir(), "c.csv")
	os.WriteFile(csvPath, []byte("phone_number,ho_ten\n0912345678,A\n0912345679,B\n"), 0o600)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"import", "--database", m.Config.Database, "--scenario", store.DemoScenarioID, csvPath}, &out, nil); err != nil {
		t.Fatalf("import: %v", err)
	}
	app, _ := m.store.DemoApp(context.Background())
	if ids := contactIDs(t, m.store, app.ID); len(ids) != 2 {
		t.Errorf("the server sees %d contacts, want 2: %s", len(ids), out.String())
	}
}

// The skipped-rows file is opened in a spreadsheet to be fixed: a cell
// that a spreadsheet would run as a formula gets a leading ' (text), while
// a phone number written +84... stays as it was, and importing the fixed
// file again reads it (docs/operations.md#bulk-import-from-a-file).
func TestImportSkippedRowsAreSpreadsheetSafe(t *testing.T) {
	eachBackend(t, testImportSkippedRowsAreSpreadsheetSafe)
}

func testImportSkippedRowsAreSpreadsheetSafe(t *testing.T, backend string) {
	db := importDB(t, backend)
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "contacts.csv")
	rows := [][]string{
		{"phone_number", "ho_ten", "ghi_chu"},
		{"0912345678", "A", ""},
		{"=cmd|' /C calc'!A0", `=HYPERLINK("http://127.0.0.1/x","click")`, "@SUM(1+1)*cmd|' /C calc'!A0"},
		{"+84 912 345 678", "-2+3+cmd|' /C calc'!A0", "\t=1+1"},
		{"not a phone", "\r=1+1", "+1"},
	}
	var in bytes.Buffer
	w := csv.NewWriter(&in)
	w.WriteAll(rows)
	os.WriteFile(csvPath, in.Bytes(), 0o600)
	importFile := func(path string) [][]string {
		t.Helper()
		args := []string{"import", "--database", db, "--app", "imp-key", "--scenario", "sc-unique", path}
		if err := run(context.Background(), args, io.Discard, nil); err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		b, err := os.ReadFile(strings.TrimSuffix(path, ".csv") + ".skipped.csv")
		if err != nil {
			t.Fatal(err)
		}
		got, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := importFile(csvPath)
	want := [][]string{
		{"row", "reason", "phone_number", "ho_ten", "ghi_chu"},
		{"3", "", "'=cmd|' /C calc'!A0", `'=HYPERLINK("http://127.0.0.1/x","click")`, "'@SUM(1+1)*cmd|' /C calc'!A0"},
		{"4", "phone_number repeats an earlier contact of this request", "+84 912 345 678", "'-2+3+cmd|' /C calc'!A0", "'\t=1+1"},
		{"5", "", "not a phone", "'\r=1+1", "+1"},
	}
	if len(got) != len(want) {
		t.Fatalf("skipped rows:\n%q", got)
	}
	for i := range want {
		row := append([]string(nil), got[i]...)
		if i == 1 || i == 3 { // the phone parser's wording is its own
			row[1] = ""
		}
		if !slices.Equal(row, want[i]) {
			t.Errorf("skipped row %d = %q, want %q", i, got[i], want[i])
		}
	}

	// The file as it is, imported again: the +84 number is read as the
	// number already queued, not as a bad phone.
	fixed := filepath.Join(dir, "fixed.csv")
	b, _ := os.ReadFile(strings.TrimSuffix(csvPath, ".csv") + ".skipped.csv")
	os.WriteFile(fixed, b, 0o600)
	reason := ""
	for _, row := range importFile(fixed) {
		if slices.Contains(row, "+84 912 345 678") {
			reason = row[1]
		}
	}
	if reason != "phone_number is already queued for this scenario" {
		t.Errorf("the skipped file imported again: the +84 number's reason is %q, want it read and found queued", reason)
	}
}
