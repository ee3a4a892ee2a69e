package main

// The isolation matrix: tenants must never meet. For every public operation
// a token of one tenant aimed at another's scenario or campaign is answered
// exactly as for an id that does not exist (so nothing reveals that it
// does); for every admin route (taken from openapi.yaml, so a new route is
// covered the day it is documented) an application's token is refused; the
// admin token is not an application token.

import (
	"net/http"
	"sort"
	"strings"
	"testing"
)

func TestIsolationMatrix(t *testing.T) { eachBackend(t, testIsolationMatrix) }

func testIsolationMatrix(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures, append([]string{"DIALBOX_ADMIN_TOKEN=" + testAdminToken}, manyWrongTokens...)...)
	qa := "Bearer " + mintFor(t, s, "qa-key")
	other := "Bearer " + mintFor(t, s, "other-key")
	// other has a contact, so contact and import routes have a real target.
	status, body := s.do(t, "POST", opA("sc-other"), other, `{"contacts":[{"phone_number":"0912000777"}]}`)
	if status != 200 {
		t.Fatalf("other's import: %d %s", status, body)
	}
	var contactID, importID string
	queryRow(t, s.m.store, `SELECT id, import_id FROM contacts WHERE scenario_id = 'sc-other'`, nil, &contactID, &importID)

	t.Run("public", func(t *testing.T) {
		for _, c := range []struct{ name, method, theirs, missing, body string }{
			{"A on another tenant's scenario", "POST", opA("sc-other"), opA("sc-nowhere"),
				`{"contacts":[{"phone_number":"0912000001"}]}`},
			{"C on another tenant's campaign", "POST", pathC, pathC,
				`{"campaign_id":"camp-other","contacts":[{"phone_number":"0912000002"}]}`},
		} {
			t.Run(c.name, func(t *testing.T) {
				gotStatus, got := s.do(t, c.method, c.theirs, qa, c.body)
				missingBody := strings.Replace(c.body, "camp-other", "camp-nowhere", 1)
				wantStatus, want := s.do(t, c.method, c.missing, qa, missingBody)
				if gotStatus != wantStatus || string(got) != string(want) || gotStatus == 200 {
					t.Errorf("another tenant's: %d %s; missing: %d %s", gotStatus, got, wantStatus, want)
				}
			})
		}
		// B lists only the caller's scenarios, and counts only them.
		_, mine := s.do(t, "GET", pathB+"?limit=50&fields=name", qa, "")
		if strings.Contains(string(mine), "Other's") || strings.Contains(string(mine), "sc-other") {
			t.Errorf("B shows another tenant's scenarios: %s", mine)
		}
		// Contacts of other are not visible through qa's imports either:
		// the duplicate rule is per tenant and scenario.
		if status, body := s.do(t, "POST", opA("sc-remind"), qa, `{"contacts":[{"phone_number":"0912000777"}]}`); status != 200 {
			t.Errorf("a phone queued by another tenant blocks this one: %d %s", status, body)
		}
	})

	t.Run("admin token is not an application token", func(t *testing.T) {
		for _, c := range []struct{ method, path, body string }{
			{"POST", opA("sc-remind"), `{"contacts":[{"phone_number":"0912000003"}]}`},
			{"GET", pathB, ""},
			{"POST", pathC, `{"campaign_id":"camp-1","contacts":[{"phone_number":"0912000004"}]}`},
		} {
			if status, body := s.do(t, c.method, c.path, adminAuth, c.body); status != 401 ||
				string(body) != `{"status":0,"code":401,"message":"Unauthorized"}` {
				t.Errorf("%s %s with the admin token: %d %s", c.method, c.path, status, body)
			}
		}
	})

	t.Run("application tokens never reach the admin API", func(t *testing.T) {
		params := map[string]string{
			"app": "other-key", "scenario": "sc-other", "campaign": "camp-other", "contact": contactID,
			"import": importID, "pool": "POOL_SYSTEM", "number": "02873000401", "transition": "approve",
			"endpoint": "none", "message": "none", "fault": "none", "call": "none",
		}
		doc := loadContract(t)
		var routes []string
		for path, item := range doc.Paths.Map() {
			if !strings.HasPrefix(path, "/admin/") {
				continue
			}
			for method := range item.Operations() {
				routes = append(routes, method+" "+path)
			}
		}
		sort.Strings(routes)
		if len(routes) < 40 {
			t.Fatalf("only %d admin routes documented", len(routes))
		}
		t.Logf("%d admin routes, each with two tenants' tokens and none", len(routes))
		for _, route := range routes {
			method, path, _ := strings.Cut(route, " ")
			for name, value := range params {
				path = strings.ReplaceAll(path, "{"+name+"}", value)
			}
			if strings.Contains(path, "{") {
				t.Errorf("%s: no value for a path parameter", route)
				continue
			}
			for _, auth := range []string{qa, other, ""} {
				status, body := s.do(t, method, path, auth, `{}`)
				if status != http.StatusUnauthorized || !strings.Contains(string(body), `"status":0`) ||
					strings.Contains(string(body), "sc-other") || strings.Contains(string(body), contactID) {
					t.Errorf("%s with an application token or none: %d %s", route, status, body)
				}
			}
		}
		// Nothing those requests asked for happened.
		if status, body := s.do(t, "GET", "/admin/v1/apps/other-key", adminAuth, ""); status != 200 ||
			!strings.Contains(string(body), `"disabled":false`) {
			t.Errorf("other after the refused admin calls: %d %s", status, body)
		}
	})
}
