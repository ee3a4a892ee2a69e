package main

import (
	"net/http"
	"net/url"
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
