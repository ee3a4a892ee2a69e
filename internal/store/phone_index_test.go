package store

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/recordings"
)

// TestPhoneSearchBehindTheIndex: a search by phone finds every contact of
// that phone, newest first, whether the phone index holds it yet or not
// (schema.sql's migration 18): before the writer's first batch, after it,
// across pages, and after the newest contacts are deleted and SQLite gives
// their seqs to new ones.
func TestPhoneSearchBehindTheIndex(t *testing.T) {
	app := tenant()
	second := *app.Scenarios[0]
	second.ID, second.Name = "sc2", "sc2"
	app.Scenarios = append(app.Scenarios, &second)
	s := openSQLite(t, app)
	ctx := context.Background()
	const phone = "+84914000001"
	var want []string // the ids of the phone's contacts, oldest first
	importPhone := func(scenario string, others int) {
		t.Helper()
		list := phones(others, len(want)*others)
		list = append(list, phone)
		req := contactsRequest(app.ID, scenario, 0, list...)
		req.UniquePhone = false
		res, err := s.Import(ctx, req, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, res.Added[len(res.Added)-1].ID)
	}
	// indexed checks that the index holds the contacts up to its mark,
	// those exactly.
	indexed := func() (entries, mark int64) {
		t.Helper()
		// The writer indexes after it answers a commit: the next write
		// it takes runs after that.
		if err := s.Ping(ctx); err != nil {
			t.Fatal(err)
		}
		var missing, extra int64
		if err := s.read.QueryRow(`SELECT (SELECT count(*) FROM contact_phones), i.seq,
			(SELECT count(*) FROM (SELECT app_id, phone, seq FROM contacts WHERE seq <= i.seq EXCEPT SELECT app_id, phone, seq FROM contact_phones)),
			(SELECT count(*) FROM (SELECT app_id, phone, seq FROM contact_phones EXCEPT SELECT app_id, phone, seq FROM contacts WHERE seq <= i.seq))
			FROM contact_phones_indexed i`).Scan(&entries, &mark, &missing, &extra); err != nil {
			t.Fatal(err)
		}
		if missing != 0 || extra != 0 {
			t.Fatalf("the phone index lacks %d contacts up to its mark %d and holds %d others", missing, mark, extra)
		}
		return entries, mark
	}
	search := func(stage string) {
		t.Helper()
		var got []string
		cursor := int64(0)
		for page := 0; ; page++ {
			out, next, err := s.Contacts(ctx, app.ID, domain.ContactFilter{Phone: phone,
				CursorPage: domain.CursorPage{Limit: 2, Cursor: cursor}})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range out {
				if c.Phone != phone {
					t.Fatalf("%s: the search found %s", stage, c.Phone)
				}
				got = append(got, c.ID)
			}
			if next == "" || page > len(want) {
				break
			}
			fmt.Sscan(next, &cursor)
		}
		newestFirst := slices.Clone(want)
		slices.Reverse(newestFirst)
		if !slices.Equal(got, newestFirst) {
			t.Fatalf("%s: the search found %v, want %v", stage, got, newestFirst)
		}
	}

	importPhone("sc", 10)
	importPhone("sc", 10)
	if entries, _ := indexed(); entries != 0 {
		t.Fatalf("%d contacts in the phone index before %d waited for it", entries, PhoneIndexEvery)
	}
	search("none indexed yet")

	importPhone("sc", PhoneIndexEvery) // the batch that sets the writer indexing
	entries, mark := indexed()
	if entries != int64(len(want)-1)*11+PhoneIndexEvery+1 {
		t.Fatalf("the phone index holds %d contacts after the writer's batch", entries)
	}
	importPhone("sc", 10) // after the mark
	search("indexed and not")

	// The newest contacts go with their scenario: the mark comes down to
	// the last contact left, so the seqs SQLite hands out again are
	// searched beside the index.
	importPhone("sc2", 3)
	importPhone("sc2", PhoneIndexEvery)
	if _, m := indexed(); m <= mark {
		t.Fatalf("the mark stayed at %d after a second batch", m)
	}
	if err := s.DeleteScenario(ctx, app.ID, "sc2"); err != nil {
		t.Fatal(err)
	}
	want = want[:len(want)-2]
	var last int64
	if err := s.read.QueryRow(`SELECT max(seq) FROM contacts`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	if _, mark = indexed(); mark != last {
		t.Fatalf("after the delete the mark is %d, above the last contact, %d", mark, last)
	}
	importPhone("sc", 10)
	search("after a delete")

	// The search reads the index's key, not every contact: the query is
	// Contacts' by phone, phoneSeqs as the store runs it.
	var plan []string
	rows, err := s.read.Query(`EXPLAIN QUERY PLAN SELECT `+contactColumns+` FROM contacts WHERE app_id = ? AND seq IN (`+phoneSeqs+`)
		AND phone = ? ORDER BY seq DESC LIMIT 2`, app.ID, app.ID, phone, app.ID, phone, phone)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if p := strings.Join(plan, "\n"); strings.Contains(p, "SCAN contacts") ||
		!strings.Contains(p, "SEARCH contact_phones USING PRIMARY KEY (app_id=? AND phone=?)") {
		t.Errorf("the search does not read the phone index's key, or scans the contacts:\n%s", p)
	}
}

// TestPhoneIndexMigration: a database made before migration 18 comes out
// of it with every contact it holds in the phone index and the mark on the
// last, so a search finds them from the index alone.
func TestPhoneIndexMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dialbox.db")
	ctx := context.Background()
	app := tenant()
	old, err := OpenSQLite(path, schema(t, "schema.sql")[:phoneIndexVersion-1], NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.ApplyFixtures(ctx, []*FixtureApp{app}, time.Now()); err != nil {
		t.Fatal(err)
	}
	req := contactsRequest(app.ID, "sc", 0, append(phones(100, 0), "+84914000001")...)
	if _, err := old.Import(ctx, req, time.Now()); err != nil {
		t.Fatal(err)
	}
	old.Close()

	s := openSQLiteAt(t, path)
	var entries, mark, last int64
	if err := s.read.QueryRow(`SELECT (SELECT count(*) FROM contact_phones), (SELECT seq FROM contact_phones_indexed), (SELECT max(seq) FROM contacts)`).
		Scan(&entries, &mark, &last); err != nil {
		t.Fatal(err)
	}
	if entries != 101 || mark != last || s.unindexed != 0 {
		t.Fatalf("after the migration: %d contacts in the phone index, mark %d (last contact %d), %d waiting", entries, mark, last, s.unindexed)
	}
	out, _, err := s.Contacts(ctx, app.ID, domain.ContactFilter{Phone: "+84914000001", CursorPage: domain.CursorPage{Limit: 10}})
	if err != nil || len(out) != 1 {
		t.Fatalf("the search found %d contacts (%v), want 1", len(out), err)
	}
}
