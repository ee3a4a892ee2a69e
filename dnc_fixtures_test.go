package main

import (
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/store"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dncNumbersOf lists the numbers on a list's current version, in E.164.
func dncNumbersOf(t testing.TB, s Store, list int64) []string {
	t.Helper()
	out := []string{}
	queryRows(t, s, `SELECT n.number FROM dnc_lists l JOIN dnc_numbers n ON n.list_id = l.id
		WHERE l.state = 'current' AND coalesce(l.app_id, 0) = ? ORDER BY n.number`, []any{list},
		func(scan func(...any) error) error {
			var n int64
			err := scan(&n)
			out = append(out, domain.DNCE164(n))
			return err
		})
	return out
}

const dncFixtures = `
[dnc]
numbers = ["0913000001", "+84 913 000 003"]
file = "register.csv"

[[applications]]
api_key = "fx-key"
api_secret = "fx-secret"
  [applications.dnc]
  numbers = ["0913000011", "84913000012"]
`

// The fixtures' do-not-call numbers (docs/compliance.md#fixtures): [dnc]
// and its file are added to the national register at every start, and a
// reset leaves the register as it is; an application's numbers are on its
// list after a start and after a reset, which rebuilds that list.
func TestDNCFixtures(t *testing.T) { eachBackend(t, testDNCFixtures) }

func testDNCFixtures(t *testing.T, backend string) {
	dir := t.TempDir()
	writeFileAt(t, filepath.Join(dir, "register.csv"), "so_dien_thoai,ten\n0913000002,A\nnot a number,B\n0913000001,C\n")
	fixtures := filepath.Join(dir, "fixtures.toml")
	writeFileAt(t, fixtures, dncFixtures)
	db := filepath.Join(dir, "dialbox.db")
	if backend != "sqlite" {
		db = backendDatabase(t, backend)
	}
	start := func() *Main {
		return startMain(t, io.Discard, []string{"--database", db, "--fixtures", fixtures}, []string{"DIALBOX_ENGINE_ENABLED=false"}, nil)
	}
	ctx := context.Background()
	appID := func(m *Main) int64 {
		app, err := m.store.AppByKey(ctx, "fx-key")
		if err != nil {
			t.Fatal(err)
		}
		return app.ID
	}
	expect := func(m *Main, when string, national, tenant []string) {
		t.Helper()
		if got := dncNumbersOf(t, m.store, domain.NationalList); !slices.Equal(got, national) {
			t.Errorf("%s: the national register holds %v, want %v", when, got, national)
		}
		if got := dncNumbersOf(t, m.store, appID(m)); !slices.Equal(got, tenant) {
			t.Errorf("%s: the tenant's list holds %v, want %v", when, got, tenant)
		}
	}
	all := []string{"+84913000001", "+84913000002", "+84913000003"}
	own := []string{"+84913000011", "+84913000012"}

	m := start()
	expect(m, "first start", all, own)

	// The lists change while the server runs: a national number is taken
	// off, the tenant gains an opt-out and loses a fixture number.
	if err := m.store.RemoveDNC(ctx, domain.NationalList, "+84913000001"); err != nil {
		t.Fatal(err)
	}
	dncAdd(t, m.store, appID(m), "+84913000013")
	if err := m.store.RemoveDNC(ctx, appID(m), "+84913000011"); err != nil {
		t.Fatal(err)
	}
	if err := m.resetTenants(ctx); err != nil {
		t.Fatal(err)
	}
	expect(m, "after a reset", all[1:], own)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// A start puts the fixtures' numbers back, and keeps the others.
	dncAdd(t, mustOpenStore(t, db), domain.NationalList, "+84913000004")
	m = start()
	defer m.Close()
	expect(m, "the next start", append(slices.Clone(all), "+84913000004"), own)
}

func mustOpenStore(t testing.TB, database string) Store {
	t.Helper()
	s, err := openConfiguredStore(context.Background(), configOn(database), store.NewMetrics(config.IsPostgresURL(database)))
	if err != nil {
		t.Fatal(err)
	}
	opened(t, s, database)
	t.Cleanup(func() { s.Close() })
	return s
}

// A bad number or a missing list file is an error of the fixtures file, at
// its line and key.
func TestDNCFixturesErrors(t *testing.T) {
	for _, tc := range []struct{ name, fixtures, want string }{
		{"bad tenant number", strings.Replace(dncFixtures, `"84913000012"`, `"12"`, 1),
			`fixtures.toml:10: applications[0].dnc.numbers[1]: "12" is not a phone number`},
		{"bad national number", strings.Replace(dncFixtures, `"0913000001"`, `"hello"`, 1),
			`fixtures.toml:3: dnc.numbers[0]: "hello" is not a phone number`},
		{"missing file", strings.Replace(dncFixtures, `register.csv`, `missing.csv`, 1),
			`fixtures.toml:4: dnc.file: open `},
		{"file without a phone column", strings.Replace(dncFixtures, `register.csv`, `names.csv`, 1),
			`fixtures.toml:4: dnc.file: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFileAt(t, filepath.Join(dir, "register.csv"), "0913000002\n")
			writeFileAt(t, filepath.Join(dir, "names.csv"), "name,city\nA,B\n")
			fixtures := filepath.Join(dir, "fixtures.toml")
			writeFileAt(t, fixtures, tc.fixtures)
			m := NewMain(io.Discard)
			m.Log = testLogger(t)
			if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--database", filepath.Join(dir, "dialbox.db"),
				"--fixtures", fixtures}, []string{"DIALBOX_ENGINE_ENABLED=false"}); err != nil {
				t.Fatal(err)
			}
			err := m.Run(context.Background())
			if err == nil {
				m.Close()
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want %q", err, tc.want)
			}
		})
	}
}
