package main

import (
	"encoding/csv"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dialbox/internal/admin"
	"dialbox/internal/domain"
)

// readResults downloads an export through the admin API and reads its
// rows by column name, checking what every export is: CSV with a BOM.
func readResults(t *testing.T, s *testServer, path string) []map[string]string {
	t.Helper()
	resp, b, err := request("GET", s.url+"/admin/v1"+path, adminAuth, "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment;") {
		t.Fatalf("%s: HTTP %d %s %q", path, resp.StatusCode, resp.Header, b)
	}
	text, bom := strings.CutPrefix(string(b), "\uFEFF")
	if !bom {
		t.Errorf("%s does not start with the UTF-8 BOM", path)
	}
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil || len(rows) == 0 {
		t.Fatalf("%s: %v %q", path, err, text)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, name := range rows[0] {
			m[name] = r[i]
		}
		out = append(out, m)
	}
	return out
}

// The results export holds, for each contact of a scenario or a campaign,
// what the admin API says of it and of its last call; its filters select
// as the contacts list's do, bad ones are refused in the envelope, and a
// formula in a field is written as text.
func TestResultsExport(t *testing.T) { eachBackend(t, testResultsExport) }

func testResultsExport(t *testing.T, backend string) {
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000")
	hostile := `=HYPERLINK(\"http://evil.example\",\"Bấm vào\")`
	var contacts []string
	for i, name := range []string{"Nguyễn Văn Ấn", hostile, "Trần Thị B", "C"} {
		contacts = append(contacts, `{"phone_number":"090000000`+strconv.Itoa(i+1)+`","ho_ten":"`+name+`","note":"n`+strconv.Itoa(i)+`"}`)
	}
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", opA("sc-remind"), `{"contacts":[`+strings.Join(contacts, ",")+`]}`); st != 200 {
		t.Fatalf("A: %+v", e)
	}
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", pathC, `{"campaign_id":"camp-1","contacts":[{"phone_number":"0912345678","ho_ten":"D"}]}`); st != 200 {
		t.Fatalf("C: %+v", e)
	}
	waitFor(t, "every contact done", func() bool {
		return queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE state <> 'done'`) == 0
	})

	rows := readResults(t, s, "/apps/qa-key/scenarios/sc-remind/results.csv")
	var list struct{ Contacts []domain.ContactRecord }
	s.admin(t, "GET", "/apps/qa-key/contacts?scenario_id=sc-remind", "", &list)
	if len(rows) != len(list.Contacts) || len(rows) != 5 {
		t.Fatalf("%d rows, the admin API lists %d contacts", len(rows), len(list.Contacts))
	}
	for _, row := range rows {
		var c admin.ContactWithCalls
		s.admin(t, "GET", "/apps/qa-key/contacts/"+row["contact_id"], "", &c)
		if len(c.Calls) == 0 {
			t.Fatalf("contact %s has no call", c.ID)
		}
		last := c.Calls[len(c.Calls)-1]
		rest := maps.Clone(c.Fields)
		delete(rest, "ho_ten")
		b, _ := json.Marshal(rest)
		other := string(b)
		name := c.Fields["ho_ten"]
		if strings.HasPrefix(name, "=") {
			name = "'" + name
		}
		want := map[string]string{"contact_id": c.ID, "campaign_id": c.CampaignID, "phone": c.Phone, "ho_ten": name,
			"other_fields": other, "state": c.State, "outcome": c.Outcome, "attempts": strconv.Itoa(c.Attempts),
			"started_at_utc": last.StartedAt.UTC().Format("2006-01-02 15:04:05"), "answered_at_utc": timeOr(last.AnsweredAt),
			"ended_at_utc": timeOr(last.EndedAt), "duration_seconds": strconv.FormatInt(last.Duration, 10),
			"cost": strconv.FormatInt(last.Cost, 10), "answered_by": last.AnsweredBy, "digits": last.Digits,
			"result": last.Result, "recording_url": last.RecordingURL}
		for k, v := range want {
			if row[k] != v {
				t.Errorf("contact %s: %s is %q in the export, %q in the admin API", c.ID, k, row[k], v)
			}
		}
	}
	if !slices.ContainsFunc(rows, func(r map[string]string) bool { return r["ho_ten"] == "Nguyễn Văn Ấn" }) {
		t.Error("the Vietnamese name did not come back whole")
	}

	camp := readResults(t, s, "/apps/qa-key/campaigns/camp-1/results.csv")
	if len(camp) != 1 || camp[0]["phone"] != "+84912345678" || camp[0]["campaign_id"] != "camp-1" {
		t.Errorf("camp-1's export: %v", camp)
	}
	outcome := rows[0]["outcome"]
	var same struct{ Contacts []domain.ContactRecord }
	s.admin(t, "GET", "/apps/qa-key/contacts?scenario_id=sc-remind&outcome="+outcome, "", &same)
	for query, want := range map[string]int{
		"outcome=" + outcome: len(same.Contacts), "state=done": 5, "state=queued": 0,
		"from=2000-01-01": 5, "to=2000-01-01": 0, "from=2099-01-01T00:00:00Z": 0,
	} {
		if got := readResults(t, s, "/apps/qa-key/scenarios/sc-remind/results.csv?"+query); len(got) != want {
			t.Errorf("%s: %d rows, want %d", query, len(got), want)
		}
	}
	e := s.adminFail(t, "GET", "/apps/qa-key/scenarios/sc-remind/results.csv?state=lost&outcome=NOPE&from=monday", "", 400)
	for _, f := range []string{"state", "outcome", "from"} {
		wantField(t, e, f)
	}
	s.adminFail(t, "GET", "/apps/qa-key/scenarios/nope/results.csv", "", 404)
	s.adminFail(t, "GET", "/apps/qa-key/campaigns/nope/results.csv", "", 404)
	s.adminFail(t, "GET", "/apps/other-key/campaigns/camp-1/results.csv", "", 404)
	if st, _ := s.do(t, "GET", "/admin/v1/apps/qa-key/scenarios/sc-remind/results.csv", "", ""); st != 401 {
		t.Errorf("an export without the admin token answered %d", st)
	}
}

// timeOr is a time as the export writes it, "" for none.
func timeOr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05")
}

// The console's scenario and campaign pages download the admin API's
// export, byte for byte, from a plain form; bad filters show the page
// again with the form as sent and every problem.
func TestConsoleResultsExport(t *testing.T) { eachBackend(t, testConsoleResultsExport) }

func testConsoleResultsExport(t *testing.T, backend string) {
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000")
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", pathC, `{"campaign_id":"camp-1","contacts":[{"phone_number":"0912345678","ho_ten":"=1+2"}]}`); st != 200 {
		t.Fatalf("C: %+v", e)
	}
	waitFor(t, "every contact done", func() bool {
		return queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE state <> 'done'`) == 0
	})
	c := signedIn(t, s)
	// The outcome mix is drawn: one stretch per outcome, end to end.
	_, body := c.get("/console/apps/qa-key/campaigns/camp-1")
	rects := regexp.MustCompile(`<rect x="([0-9.]+)" y="0" width="([0-9.]+)" height="8" class="o-[a-z_]+"><title>([A-Z_]+): 1 \(100.0%\)</title>`).FindAllStringSubmatch(body, -1)
	if len(rects) != 1 || rects[0][1] != "0.00" || rects[0][2] != "100.00" || !strings.Contains(body, `aria-labelledby="mix-title"`) {
		t.Errorf("the outcome mix of one done contact: %q\n%s", rects, body)
	}
	for _, page := range []string{"/apps/qa-key/scenarios/sc-remind", "/apps/qa-key/campaigns/camp-1"} {
		_, body = c.get("/console" + page)
		if !strings.Contains(body, `action="/console`+page+`/results.csv"`) || !strings.Contains(body, `id="export-csv"`) {
			t.Fatalf("%s has no export form:\n%s", page, body)
		}
		resp, csv := c.get("/console" + page + "/results.csv?state=done&outcome=&from=&to=")
		_, api := s.do(t, "GET", "/admin/v1"+page+"/results.csv?state=done", adminAuth, "")
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" || csv != string(api) ||
			!strings.Contains(csv, "'=1+2") {
			t.Errorf("%s: the console's export (%d) differs from the admin API's:\n%q\n%q", page, resp.StatusCode, csv, api)
		}
		resp, body = c.get("/console" + page + "/results.csv?state=lost&from=monday&to=2026-01-01")
		for _, want := range []string{`<strong>state</strong>`, `<strong>from</strong>`, `value="2026-01-01"`, `id="export-csv"`} {
			if resp.StatusCode != 400 || !strings.Contains(body, want) {
				t.Errorf("%s with bad filters: %d, lacks %q:\n%s", page, resp.StatusCode, want, body)
			}
		}
	}
	if resp, _ := newConsoleClient(t, s.url).get("/console/apps/qa-key/scenarios/sc-remind/results.csv"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("an export without a session answered %d, not the sign-in", resp.StatusCode)
	}
}
