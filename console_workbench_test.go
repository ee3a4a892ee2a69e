package main

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
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
