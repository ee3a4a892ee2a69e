package main

import (
	"dialbox/internal/domain"
	"testing"
)

// TestInvalidUTF8Refused: a string that is not UTF-8, in any body the
// public or admin API reads, is 400 naming the field, and nothing is
// stored (encoding/json would have stored U+FFFD in its place).
func TestInvalidUTF8Refused(t *testing.T) { eachBackend(t, testInvalidUTF8Refused) }

func testInvalidUTF8Refused(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	qa := bearer(t, "qa-key", "qa-secret")
	for _, c := range []struct{ path, body, field string }{
		{opA("sc-remind"), `{"contacts":[{"phone_number":"0912345678","ho_ten":"Nguy` + "\xe1" + `n"}]}`, "contacts[0].ho_ten"},
		{opA("sc-remind"), `{"contacts":[{"phone_number":"0912345678"},{"phone_number":"0912345679","h` + "\xff" + `":"A"}]}`, "contacts[1]"},
		{pathC, `{"campaign_id":"camp-` + "\xff" + `","contacts":[{"phone_number":"0912345678"}]}`, "campaign_id"},
		{pathC, `{"campaign_id":"camp-1","contacts":[{"phone_number":"0912345678","danh_xung":"` + "\xc3" + `"}]}`, "contacts[0].danh_xung"},
	} {
		status, body := s.do(t, "POST", c.path, qa, c.body)
		if status != 400 {
			t.Errorf("%s %q: HTTP %d %s", c.path, c.body, status, body)
			continue
		}
		checkValidationFailed(t, body, c.field)
	}
	var contacts struct {
		Contacts []domain.ContactRecord `json:"contacts"`
	}
	s.admin(t, "GET", "/apps/qa-key/contacts", "", &contacts)
	var imports struct {
		Imports []domain.ImportRecord `json:"imports"`
	}
	s.admin(t, "GET", "/apps/qa-key/imports", "", &imports)
	if len(contacts.Contacts) != 0 || len(imports.Imports) != 0 {
		t.Errorf("stored: %d contacts, %d imports", len(contacts.Contacts), len(imports.Imports))
	}

	wantField(t, s.adminFail(t, "POST", "/apps", `{"name":"CRM `+"\xff"+`","api_key":"utf8-key"}`, 400), "name")
	s.adminFail(t, "GET", "/apps/utf8-key", "", 404)
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/webhooks/x", `{"events":["call.completed","`+"\xff"+`"]}`, 400), "events[1]")
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/scenarios", `{"id":"sc-utf8","call_config":{"pool_hotline_key":"`+"\xff"+`"}}`, 400),
		"call_config.pool_hotline_key")
	s.adminFail(t, "GET", "/apps/qa-key/scenarios/sc-utf8", "", 404)
}
