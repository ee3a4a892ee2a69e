package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

// postForm sends a console form with the session's CSRF token and follows
// its redirect; it returns the page the form led to.
func (c *consoleClient) postForm(path string, form url.Values) string {
	c.t.Helper()
	form.Set("csrf", c.csrf("/console/"))
	resp, body := c.post(path, form)
	if resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("POST %s %v answered %d:\n%s", path, form, resp.StatusCode, body)
	}
	_, body = c.get(resp.Header.Get("Location"))
	return body
}

// A supervisor runs a campaign from the console without JavaScript: the
// scenario submitted and approved, a campaign created paused, resumed,
// stopped; each action in the audit log under the name given at sign-in.
func TestConsoleRunsACampaign(t *testing.T) { eachBackend(t, testConsoleRunsACampaign) }

func testConsoleRunsACampaign(t *testing.T, backend string) {
	s := startSandboxOn(t, backend) // the engine is off: contacts stay queued until the stop
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"sc-new","name":"New","content":"Xin chào"}`, nil)
	c := newConsoleClient(t, s.url)
	if resp, _ := c.post("/console/signin", url.Values{"csrf": {c.csrf("/console/signin")}, "token": {testAdminToken},
		"name": {"Lan"}, "next": {"/console/"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in answered %d", resp.StatusCode)
	}
	page := "/console/apps/qa-key/scenarios/sc-new"
	_, body := c.get(page)
	if !strings.Contains(body, `id="transition-submit"`) || strings.Contains(body, `id="transition-approve"`) {
		t.Fatalf("a DRAFT scenario's page offers the wrong transitions:\n%s", body)
	}
	body = c.postForm(page+"/status", url.Values{"transition": {"submit"}})
	if !strings.Contains(body, `id="scenario-status">REVIEWING<`) || !strings.Contains(body, `id="transition-approve"`) {
		t.Fatalf("after submitting:\n%s", body)
	}
	body = c.postForm(page+"/status", url.Values{"transition": {"approve"}})
	if !strings.Contains(body, `id="scenario-status">ACTIVE<`) {
		t.Fatalf("after approving:\n%s", body)
	}
	// A transition the status does not allow is refused, beside the page.
	if body = c.postForm(page+"/status", url.Values{"transition": {"approve"}}); !strings.Contains(body, "Failed: Cannot approve a scenario in status ACTIVE") {
		t.Errorf("approving twice:\n%s", body)
	}

	body = c.postForm(page+"/campaigns", url.Values{"name": {"Tháng 12"}, "id": {"camp-dec"}})
	if !strings.Contains(body, "Campaign created, paused") || !strings.Contains(body, `id="resume"`) {
		t.Fatalf("after creating a campaign:\n%s", body)
	}
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", pathC, `{"campaign_id":"camp-dec","contacts":[{"phone_number":"0912345678"},{"phone_number":"0912345679"}]}`); st != 200 {
		t.Fatalf("C: %+v", e)
	}
	camp := "/console/apps/qa-key/campaigns/camp-dec"
	if body = c.postForm(camp+"/resume", url.Values{}); !strings.Contains(body, `id="pause"`) {
		t.Fatalf("after resuming:\n%s", body)
	}
	if body = c.postForm(camp+"/stop", url.Values{}); !strings.Contains(body, "Stopped: 2 queued contacts ended CANCELED") {
		t.Fatalf("after stopping:\n%s", body)
	}
	if n := queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE campaign_id = 'camp-dec' AND outcome = 'CANCELED'`); n != 2 {
		t.Errorf("%d contacts CANCELED, want 2", n)
	}
	body = c.postForm(page+"/campaigns", url.Values{"id": {"camp-dec"}})
	if !strings.Contains(body, `Failed: Campaign &#34;camp-dec&#34; already exists`) {
		t.Errorf("a second campaign of the same id:\n%s", body)
	}

	_, body = c.get("/console/audit")
	for _, want := range []string{
		"POST /console/apps/qa-key/scenarios/sc-new/status", "POST /console/apps/qa-key/campaigns/camp-dec/stop",
		"Stopped: 2 queued contacts ended CANCELED", "refused: Cannot approve", "signed in", "Lan (sign-in ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the audit log lacks %q:\n%s", want, body)
		}
	}
	if n := queryInt(t, s.m.store, `SELECT count(*) FROM audit_log WHERE actor LIKE 'Lan (sign-in %'`); n != 8 {
		t.Errorf("%d audit entries of Lan's sign-in, want 8: sign-in, 3 transitions, 2 campaigns, resume, stop", n)
	}
}

// A scenario is created and edited from the console's form, its script as
// JSON or TOML; a problem is shown beside the line it concerns, the form
// kept as sent, and nothing is saved.
func TestConsoleEditsAScenario(t *testing.T) { eachBackend(t, testConsoleEditsAScenario) }

func testConsoleEditsAScenario(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	c := signedIn(t, s)
	form := url.Values{"id": {"sc-made"}, "name": {"Nhắc hẹn"}, "content": {"Xin chào {{ho_ten}}"}, "personalized_fields": {"ho_ten, ngay"},
		"window_start": {"09:00"}, "window_end": {"17:00"}, "max_concurrent": {"3"}, "re_call_times": {"2"}, "re_call_delay": {"600"},
		"re_call_busy": {"1"}, "pool": {"POOL_SYSTEM"}, "purpose": {"care"}, "record": {"1"}, "script_format": {"json"},
		"script": {`{"steps": [
  {"name": "hello", "say": {"text": "Xin chào {{ho_ten}}", "next": "bye"}},
  {"name": "bye", "hangup": {}}
]}`}}
	body := c.postForm("/console/apps/qa-key/new-scenario", form)
	if !strings.Contains(body, "Done: Scenario sc-made saved.") {
		t.Fatalf("after creating:\n%s", body)
	}
	var sc struct {
		Name               string
		Status             string
		PersonalizedFields []string `json:"personalized_fields"`
		Script             *struct{ Steps []struct{ Name string } }
		CallConfig         struct {
			MaxConcurrent int  `json:"max_concurrent"`
			Record        bool `json:"record"`
			ReCall        struct {
				Times  int  `json:"times"`
				IsBusy bool `json:"is_busy"`
			} `json:"re_call"`
			CallWindow struct{ Start, End string } `json:"call_window"`
		} `json:"call_config"`
	}
	s.admin(t, "GET", "/apps/qa-key/scenarios/sc-made", "", &sc)
	if sc.Name != "Nhắc hẹn" || sc.Status != "DRAFT" || strings.Join(sc.PersonalizedFields, ",") != "ho_ten,ngay" ||
		sc.Script == nil || len(sc.Script.Steps) != 2 || sc.CallConfig.MaxConcurrent != 3 || !sc.CallConfig.Record ||
		sc.CallConfig.ReCall.Times != 2 || !sc.CallConfig.ReCall.IsBusy || sc.CallConfig.CallWindow.Start != "09:00" {
		t.Fatalf("the admin API shows the scenario made as %+v", sc)
	}

	edit := "/console/apps/qa-key/scenarios/sc-made/edit"
	if _, body = c.get(edit); !strings.Contains(body, `value="Nhắc hẹn"`) || !strings.Contains(body, "&#34;name&#34;: &#34;hello&#34;") {
		t.Fatalf("the edit form does not show what is stored:\n%s", body)
	}
	// A TOML script whose step goes to a step there is not: the problem is
	// beside the line of that next, line 5.
	form.Del("id")
	form.Set("script_format", "toml")
	form.Set("script", "[[steps]]\nname = \"hello\"\n[steps.say]\ntext = \"Xin chào\"\nnext = \"nowhere\"\n")
	form.Set("max_concurrent", "many")
	form.Set("csrf", c.csrf(edit))
	resp, body := c.post(edit, form)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "<strong>max_concurrent</strong> must be a whole number") ||
		!strings.Contains(body, `value="many"`) || !strings.Contains(body, `<option value="toml" selected>`) {
		t.Fatalf("a bad number: %d\n%s", resp.StatusCode, body)
	}
	form.Set("max_concurrent", "3")
	resp, body = c.post(edit, form)
	if resp.StatusCode != http.StatusBadRequest || !regexpMatch(`<tr class="bad-line"><td>5</td><td><code>next = &#34;nowhere&#34;</code></td><td><span class="bad">steps\[0\]\.say\.next: [^<]*nowhere`, body) {
		t.Fatalf("a script going nowhere: %d\n%s", resp.StatusCode, body)
	}
	// JSON that does not parse: the problem is on the line where it breaks.
	form.Set("script_format", "json")
	form.Set("script", "{\"steps\": [\n  {\"name\": \"hello\",\n   \"say\": {\"text\": \"x\"}}}\n]}")
	resp, body = c.post(edit, form)
	if resp.StatusCode != http.StatusBadRequest || !regexpMatch(`<tr class="bad-line"><td>3</td>`, body) {
		t.Fatalf("a script that is not JSON: %d\n%s", resp.StatusCode, body)
	}
	s.admin(t, "GET", "/apps/qa-key/scenarios/sc-made", "", &sc)
	if sc.Script == nil || len(sc.Script.Steps) != 2 {
		t.Errorf("a refused form changed the script: %+v", sc.Script)
	}
	// An empty script removes it: the content is said.
	form.Set("script", "")
	if body = c.postForm(edit, form); !strings.Contains(body, "Done: Scenario sc-made saved.") {
		t.Fatalf("removing the script:\n%s", body)
	}
	sc.Script = nil
	s.admin(t, "GET", "/apps/qa-key/scenarios/sc-made", "", &sc)
	if sc.Script != nil {
		t.Errorf("the script was not removed: %+v", sc.Script)
	}
	if _, body = c.get("/console/audit"); !strings.Contains(body, "POST /console/apps/qa-key/scenarios/sc-made/edit") ||
		!strings.Contains(body, "refused: max_concurrent must be a whole number") {
		t.Errorf("the audit log lacks the edits:\n%s", body)
	}
}

func regexpMatch(pattern, s string) bool { return regexp.MustCompile(pattern).MatchString(s) }

// upload posts a contacts file to a console page's upload form: the CSRF
// token (csrf; "" sends none) first, then the file.
func (c *consoleClient) upload(path, csrf, file string) (*http.Response, string) {
	c.t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	if csrf != "" {
		mw.WriteField("csrf", csrf)
	}
	fw, _ := mw.CreateFormFile("contacts", "danh-sach.csv")
	io.WriteString(fw, file)
	mw.Close()
	resp, err := c.http.Post(c.base+path, mw.FormDataContentType(), &body)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// A CSV uploaded on a campaign's page is read as dialbox import reads it,
// a line of progress per thousand rows; the skipped rows download with
// their row numbers and reasons, spreadsheet-safe.
func TestConsoleUploadsContacts(t *testing.T) { eachBackend(t, testConsoleUploadsContacts) }

func testConsoleUploadsContacts(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	c := signedIn(t, s)
	var file strings.Builder
	file.WriteString("\uFEFFphone_number,ho_ten,ghi_chu\r\n")
	for i := range 2500 {
		switch i {
		case 7:
			file.WriteString("12,Bad,\"=HYPERLINK(\"\"http://x\"\")\"\r\n")
		case 1234:
			file.WriteString("abc,No phone,\r\n")
		default:
			fmt.Fprintf(&file, "09%08d,Nguyễn %d,\r\n", i, i)
		}
	}
	page := "/console/apps/qa-key/campaigns/camp-1"
	if resp, _ := c.upload(page+"/upload", "", file.String()); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an upload without the CSRF token answered %d", resp.StatusCode)
	}
	if n := queryInt(t, s.m.store, `SELECT count(*) FROM contacts`); n != 0 {
		t.Fatalf("a refused upload added %d contacts", n)
	}
	_, body := c.get(page)
	if !strings.Contains(body, `enctype="multipart/form-data" id="upload"`) {
		t.Fatalf("the campaign's page has no upload form:\n%s", body)
	}
	resp, body := c.upload(page+"/upload", c.csrf(page), file.String())
	for _, want := range []string{"<li>1,000 rows read: 999 added, 1 skipped</li>", "<li>2,000 rows read: 1,998 added, 2 skipped</li>",
		`id="upload-summary">2,500 rows read: 2,498 contacts added, 2 skipped.`, `id="skipped-rows"`} {
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Fatalf("the upload's page (%d) lacks %q:\n%s", resp.StatusCode, want, body)
		}
	}
	if n := queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE campaign_id = 'camp-1' AND state = 'queued'`); n != 2498 {
		t.Errorf("%d contacts added, want 2,498", n)
	}
	link := regexp.MustCompile(`href="(/console/uploads/[^"]+/skipped.csv)"`).FindStringSubmatch(body)
	resp, skipped := c.get(link[1])
	rows, err := csv.NewReader(strings.NewReader(skipped)).ReadAll()
	if err != nil || resp.StatusCode != 200 || len(rows) != 3 {
		t.Fatalf("skipped rows (%d): %v %q", resp.StatusCode, err, skipped)
	}
	if got := strings.Join(rows[0], ","); got != "row,reason,phone_number,ho_ten,ghi_chu" {
		t.Errorf("skipped rows' header %q", got)
	}
	if rows[1][0] != "9" || !strings.Contains(rows[1][1], "phone") || rows[1][4] != `'=HYPERLINK("http://x")` ||
		rows[2][0] != "1236" || rows[2][2] != "abc" {
		t.Errorf("skipped rows %q", rows[1:])
	}
	if resp, _ := newConsoleClient(t, s.url).get(link[1]); resp.StatusCode == 200 {
		t.Error("the skipped rows download without a session")
	}
	if _, body = c.get("/console/audit"); !strings.Contains(body, "uploaded &#34;danh-sach.csv&#34;: 2500 rows read, 2498 added, 2 skipped") {
		t.Errorf("the audit log lacks the upload:\n%s", body)
	}
}

// An upload's page shows the rows read while the file is still arriving:
// its first chunk's line comes before the rest of the file is sent.
func TestConsoleUploadShowsProgressAsItReads(t *testing.T) {
	s := startSandbox(t)
	c := signedIn(t, s)
	page := "/console/apps/qa-key/scenarios/sc-remind"
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) }) // a failed test ends the upload, so the server stops
	mw := multipart.NewWriter(pw)
	go func() {
		mw.WriteField("csrf", c.csrf(page))
		fw, _ := mw.CreateFormFile("contacts", "big.csv")
		io.WriteString(fw, "phone_number,ho_ten\n")
		for i := range 1000 {
			fmt.Fprintf(fw, "09%08d,A\n", i)
		}
	}()
	// The file is not finished (its end is sent only below): the page
	// shows the first chunk's line all the same.
	seen := make(chan string, 1)
	go func() {
		resp, err := c.http.Post(c.base+page+"/upload", mw.FormDataContentType(), pr)
		if err != nil {
			seen <- err.Error()
			return
		}
		defer resp.Body.Close()
		var read bytes.Buffer
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			read.Write(buf[:n])
			if strings.Contains(read.String(), "<li>1,000 rows read: 1,000 added") || err != nil {
				seen <- read.String()
				io.Copy(io.Discard, resp.Body)
				return
			}
		}
	}()
	select {
	case page := <-seen:
		if !strings.Contains(page, "<li>1,000 rows read: 1,000 added") {
			t.Fatalf("the page ended without the first chunk's line:\n%s", page)
		}
	case <-time.After(time.Minute):
		t.Fatal("no line of progress while the file was still being sent")
	}
	mw.Close()
	pw.Close()
}

// What a supervisor met: the contact page follows its contact live; the
// answer rate is short enough for one line, and the page says what it is
// of; the journal's live line says it follows requests; a bad filter keeps
// the form and names every problem.
func TestConsoleSupervisorFixes(t *testing.T) { eachBackend(t, testConsoleSupervisorFixes) }

func testConsoleSupervisorFixes(t *testing.T, backend string) {
	s := startSandboxOn(t, backend) // the engine is off: the contact stays queued until the stop
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", pathC, `{"campaign_id":"camp-1","contacts":[{"phone_number":"0912345678","ho_ten":"A"}]}`); st != 200 {
		t.Fatalf("C: %+v", e)
	}
	var list struct{ Contacts []struct{ ID string } }
	s.admin(t, "GET", "/apps/qa-key/contacts", "", &list)
	id := list.Contacts[0].ID
	c := signedIn(t, s)
	_, page := c.get("/console/apps/qa-key/contacts/" + id)
	live := "/console/live/apps/qa-key/contacts/" + id
	if !strings.Contains(page, `data-live="`+live+`"`) || !strings.Contains(page, `<div id="contact-facts">`) {
		t.Fatalf("the contact's page does not update live:\n%s", page)
	}
	resp, err := c.http.Get(c.base + live)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := make(chan string)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				events <- line
			}
		}
	}()
	next := func(want string) {
		t.Helper()
		deadline := time.After(time.Minute)
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("the stream ended before %q", want)
				}
				if strings.Contains(e, want) {
					return
				}
			case <-deadline:
				t.Fatalf("no live update with %q", want)
			}
		}
	}
	next(`contact-state\"\u003equeued`)
	s.admin(t, "POST", "/apps/qa-key/campaigns/camp-1/stop", "", nil)
	next(`CANCELED`)

	_, page = c.get("/console/apps/qa-key/campaigns/camp-1")
	if !strings.Contains(page, `<dd id="answer-rate">0.0%</dd>`) || !strings.Contains(page, "the share of finished contacts that were answered") {
		t.Errorf("the answer rate is not short, or not explained:\n%s", page)
	}
	if _, page = c.get("/console/journal"); !strings.Contains(page, `data-live-says="requests arrive"`) {
		t.Errorf("the journal's live line does not say it follows requests:\n%s", page)
	}
	resp2, page := c.get("/console/apps/qa-key/contacts?state=lost&from=monday&phone=12&scenario_id=sc-remind")
	for _, want := range []string{`<strong>state</strong>`, `<strong>from</strong>`, `<strong>phone</strong>`, `id="phone" name="phone" value="12"`,
		`value="sc-remind"`} {
		if resp2.StatusCode != http.StatusBadRequest || !strings.Contains(page, want) {
			t.Errorf("a bad filter (%d) lacks %q:\n%s", resp2.StatusCode, want, page)
		}
	}
}
