package main

// The admin API driven over HTTP against the real server (Main on
// 127.0.0.1:0, see startServer in api_test.go): every route, isolation from
// application tokens, the journal's bounds and reset.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"dialbox/internal/admin"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/sandbox"
	"dialbox/internal/store"
	"dialbox/internal/testtool"
)

const (
	testAdminToken = "test-admin-token-0123456789"
	adminAuth      = "Bearer " + testAdminToken
)

// adminFixtures: qa is the tenant the tests manage; other is there to show
// that rules and filters for one tenant leave the other alone.
const adminFixtures = `
[[applications]]
name = "QA tenant"
api_key = "qa-key"
api_secret = "qa-secret"
  [applications.wallet]
  prepaid = true
  balance = 1000000
  expires_at = 2099-01-01T00:00:00Z
  price_per_call = 1000
  price_per_minute = 800
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000001", "02873000002"]
  [[applications.scenarios]]
  id = "sc-remind"
  name = "Payment reminder"
  status = "ACTIVE"
  content = "Xin chào {{ho_ten}}"
  personalized_fields = ["ho_ten"]
    [applications.scenarios.call_config]
    allow_duplicate_phone = true
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
  [[applications.scenarios]]
  id = "sc-second"
  status = "ACTIVE"
  content = "Xin chào"
    [applications.scenarios.call_config]
    allow_duplicate_phone = true
  [[applications.campaigns]]
  id = "camp-1"
  scenario_id = "sc-remind"
  [[applications.campaigns]]
  id = "camp-2"
  scenario_id = "sc-second"

[[applications]]
name = "Other tenant"
api_key = "other-key"
api_secret = "other-secret"
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000401"]
  [[applications.scenarios]]
  id = "sc-other"
  status = "ACTIVE"
  content = "Xin chào"
    [applications.scenarios.call_config]
    allow_duplicate_phone = true
  [[applications.campaigns]]
  id = "camp-other"
  scenario_id = "sc-other"
`

// startSandbox starts dialbox with adminFixtures and the test admin token;
// the engine is off unless env turns it on.
func startSandbox(t testing.TB, env ...string) *testServer {
	t.Helper()
	return startSandboxOn(t, "sqlite", env...)
}

// startSandboxAt is startSandbox with the admin API and the console
// reading the wall clock from now.
func startSandboxAt(t testing.TB, now func() time.Time) *testServer {
	t.Helper()
	fx := writeFile(t, "fixtures.toml", adminFixtures)
	m := startMain(t, io.Discard, []string{"--database", filepath.Join(filepath.Dir(fx), "dialbox.db"), "--fixtures", fx},
		[]string{"DIALBOX_ENGINE_ENABLED=false", "DIALBOX_LIMITS_RATE_PER_SECOND=0", "DIALBOX_ADMIN_TOKEN=" + testAdminToken},
		func(m *Main) { m.now = now })
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return &testServer{m: m, url: m.URL()}
}

// startSandboxOn is startSandbox on a new database of the backend.
func startSandboxOn(t testing.TB, backend string, env ...string) *testServer {
	t.Helper()
	return startServerOn(t, backend, adminFixtures, append([]string{"DIALBOX_ADMIN_TOKEN=" + testAdminToken}, env...)...)
}

// admin sends an admin request that must succeed and decodes its result
// into out (if not nil).
func (s *testServer) admin(t testing.TB, method, path, body string, out any) {
	t.Helper()
	status, b := s.do(t, method, "/admin/v1"+path, adminAuth, body)
	var env struct {
		Status int             `json:"status"`
		Result json.RawMessage `json:"result"`
	}
	if status != 200 || json.Unmarshal(b, &env) != nil || env.Status != 1 {
		t.Fatalf("%s %s %s: want success, got HTTP %d %s", method, path, body, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(env.Result, out); err != nil {
			t.Fatalf("%s %s: result %s: %v", method, path, env.Result, err)
		}
	}
}

// adminFail sends an admin request that must fail with code (also its HTTP
// status) and returns the error body.
func (s *testServer) adminFail(t testing.TB, method, path, body string, code int) httpx.ErrorBody {
	t.Helper()
	status, b := s.do(t, method, "/admin/v1"+path, adminAuth, body)
	var e httpx.ErrorBody
	if err := json.Unmarshal(b, &e); err != nil || status != code || e.Code != code || e.Status != 0 || e.Message == "" {
		t.Fatalf("%s %s %s: want error %d, got HTTP %d %s", method, path, body, code, status, b)
	}
	return e
}

// wantField checks that a 400 names field in its details.
func wantField(t testing.TB, e httpx.ErrorBody, field string) {
	t.Helper()
	for _, d := range e.Details {
		if d.Field == field {
			return
		}
	}
	t.Errorf("validation error %+v does not name %q", e, field)
}

// public sends a public API request as tenant key/secret and returns the
// HTTP status and the decoded body.
func (s *testServer) public(t testing.TB, key, secret, method, path, body string) (int, httpx.ErrorBody) {
	t.Helper()
	status, b := s.do(t, method, path, bearer(t, key, secret), body)
	var e httpx.ErrorBody
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("%s %s: %s", method, path, b)
	}
	if e.Code == 0 && !bytes.HasPrefix(b, []byte(`{"status":1`)) {
		t.Fatalf("%s %s: neither success nor error: %s", method, path, b)
	}
	return status, e
}

func qaImport(t testing.TB, s *testServer, body string) (int, httpx.ErrorBody) {
	t.Helper()
	return s.public(t, "qa-key", "qa-secret", "POST", opA("sc-remind"), body)
}

const oneContact = `{"contacts":[{"phone_number":"0912345678","ho_ten":"A"}]}`

func TestAdminAuthAndIsolation(t *testing.T) { eachBackend(t, testAdminAuthAndIsolation) }

func testAdminAuthAndIsolation(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	appToken := bearer(t, "qa-key", "qa-secret")
	for _, auth := range []string{"", "Bearer", "Bearer wrong-token-0123456789", appToken, testAdminToken, "Basic " + testAdminToken} {
		status, b := s.do(t, "GET", "/admin/v1/apps", auth, "")
		if status != 401 || string(b) != `{"status":0,"code":401,"message":"Unauthorized"}` {
			t.Errorf("admin API with %q: HTTP %d %s", auth, status, b)
		}
	}
	// The admin token is not an application token either.
	status, b := s.do(t, "GET", pathB, adminAuth, "")
	if status != 401 || !strings.Contains(string(b), `"code":401`) {
		t.Errorf("public API with the admin token: HTTP %d %s", status, b)
	}
	// The admin API's own 404 for an unknown tenant, not another tenant's data.
	s.adminFail(t, "GET", "/apps/nobody/scenarios", "", 404)
}

// The token a first start generates is kept (hashed) in the database, so
// a restart on the same database takes it.
func TestAdminGeneratedToken(t *testing.T) { eachBackend(t, testAdminGeneratedToken) }

func testAdminGeneratedToken(t *testing.T, backend string) {
	db := backendDatabase(t, backend)
	m, out := startDemoMain(t, db)
	_, rest, ok := strings.Cut(out, "Admin API token")
	if !ok {
		t.Fatalf("first start printed no admin token:\n%s", out)
	}
	token := strings.Fields(strings.SplitN(rest, "\n", 3)[1])[0]
	s := &testServer{m: m, url: m.URL()}
	if status, b := s.do(t, "GET", "/admin/v1/apps", "Bearer "+token, ""); status != 200 {
		t.Fatalf("generated token refused: %d %s", status, b)
	}
	stored, err := m.store.AdminSetting(context.Background(), admin.TokenSetting)
	if err != nil || stored == "" || strings.Contains(stored, token) {
		t.Fatalf("stored setting %q (%v) must be the token's hash", stored, err)
	}
	m.Close()

	m, out = startDemoMain(t, db)
	defer m.Close()
	if strings.Contains(out, "Admin API token") {
		t.Errorf("second start printed a new admin token:\n%s", out)
	}
	s = &testServer{m: m, url: m.URL()}
	if status, b := s.do(t, "GET", "/admin/v1/apps", "Bearer "+token, ""); status != 200 {
		t.Fatalf("token of the first start refused after a restart: %d %s", status, b)
	}
}

// startDemoMain starts dialbox on db without fixtures, so with the demo
// tenant, and returns it with what it printed. The caller closes it, as a
// test may restart on the same database.
func startDemoMain(t testing.TB, db string, env ...string) (*Main, string) {
	t.Helper()
	var out bytes.Buffer
	m := startMain(t, &out, []string{"--database", db}, append([]string{"DIALBOX_ENGINE_ENABLED=false"}, env...), nil)
	return m, out.String()
}

func TestAdminApplications(t *testing.T) { eachBackend(t, testAdminApplications) }

func testAdminApplications(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var created struct {
		domain.Application
		APISecret   string `json:"api_secret"`
		AccessToken string `json:"access_token"`
	}
	s.admin(t, "POST", "/apps", `{"name":"CRM staging"}`, &created)
	if created.APIKey == "" || created.APISecret == "" || created.Name != "CRM staging" || created.Disabled {
		t.Fatalf("created %+v", created)
	}
	// The returned token works on the public API: a new tenant has nothing yet.
	status, b := s.do(t, "GET", pathB, "Bearer "+created.AccessToken, "")
	if status != 200 || string(b) != `{"status":1,"result":{"scenarios":[],"total_count":0}}` {
		t.Fatalf("new tenant's token: %d %s", status, b)
	}

	s.admin(t, "POST", "/apps", `{"name":"Given","api_key":"given-key","api_secret":"given-secret-0123"}`, &created)
	if created.APIKey != "given-key" || created.APISecret != "given-secret-0123" {
		t.Fatalf("created %+v", created)
	}
	s.adminFail(t, "POST", "/apps", `{"api_key":"given-key"}`, 409)
	wantField(t, s.adminFail(t, "POST", "/apps", `{"api_key":"a b"}`, 400), "api_key")
	wantField(t, s.adminFail(t, "POST", "/apps", `{"nmae":"typo"}`, 400), "nmae")
	wantField(t, s.adminFail(t, "POST", "/apps", `{"name":5}`, 400), "name")
	wantField(t, s.adminFail(t, "POST", "/apps", `[1]`, 400), "body")

	var list struct{ Applications []domain.Application }
	s.admin(t, "GET", "/apps", "", &list)
	if len(list.Applications) != 4 || list.Applications[0].APIKey != "qa-key" {
		t.Fatalf("list %+v", list)
	}
	if raw, _ := json.Marshal(list); strings.Contains(string(raw), "secret") {
		t.Errorf("list shows secrets: %s", raw)
	}

	var app domain.Application
	s.admin(t, "GET", "/apps/given-key", "", &app)
	if app.Name != "Given" {
		t.Errorf("get %+v", app)
	}
	s.admin(t, "PATCH", "/apps/given-key", `{"name":"Renamed","api_secret":"new-secret-012345"}`, &app)
	if app.Name != "Renamed" {
		t.Errorf("update %+v", app)
	}
	if st, _ := s.public(t, "given-key", "given-secret-0123", "GET", pathB, ""); st != 401 {
		t.Errorf("old secret after rotation: HTTP %d", st)
	}
	if st, _ := s.public(t, "given-key", "new-secret-012345", "GET", pathB, ""); st != 200 {
		t.Errorf("new secret: HTTP %d", st)
	}
	wantField(t, s.adminFail(t, "PATCH", "/apps/given-key", `{"api_key":"x"}`, 400), "api_key")

	s.admin(t, "POST", "/apps/qa-key/disable", "", &app)
	if !app.Disabled {
		t.Errorf("disable %+v", app)
	}
	if _, e := s.public(t, "qa-key", "qa-secret", "GET", pathB, ""); e.Code != 1201 {
		t.Errorf("disabled tenant: %+v", e)
	}
	s.admin(t, "POST", "/apps/qa-key/enable", "", &app)
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	s.admin(t, "POST", "/apps/qa-key/token", "", &tok)
	if status, _ := s.do(t, "GET", pathB, "Bearer "+tok.AccessToken, ""); status != 200 {
		t.Errorf("minted token after enable: HTTP %d", status)
	}

	s.admin(t, "DELETE", "/apps/given-key", "", nil)
	s.adminFail(t, "GET", "/apps/given-key", "", 404)
	s.adminFail(t, "DELETE", "/apps/given-key", "", 404)
	if _, e := s.public(t, "given-key", "new-secret-012345", "GET", pathB, ""); e.Code != 1201 {
		t.Errorf("deleted tenant: %+v", e)
	}
}

func TestAdminWallet(t *testing.T) { eachBackend(t, testAdminWallet) }

func testAdminWallet(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var w domain.Wallet
	s.admin(t, "GET", "/apps/qa-key/wallet", "", &w)
	if !w.Prepaid || w.Balance != 1000000 || w.PricePerCall != 1000 || w.ExpiresAt == nil {
		t.Fatalf("wallet %+v", w)
	}
	s.admin(t, "PATCH", "/apps/qa-key/wallet", `{"expires_at":"2020-01-01T00:00:00Z"}`, &w)
	if _, e := qaImport(t, s, oneContact); e.Code != 1104 {
		t.Errorf("expired wallet: %+v", e)
	}
	s.admin(t, "PATCH", "/apps/qa-key/wallet", `{"expires_at":null,"balance":500,"price_per_call":1000,"price_per_minute":900}`, &w)
	if w.ExpiresAt != nil || w.Balance != 500 || w.PricePerMinute != 900 {
		t.Fatalf("wallet %+v", w)
	}
	if _, e := qaImport(t, s, oneContact); e.Code != 1105 {
		t.Errorf("poor wallet: %+v", e)
	}
	s.admin(t, "POST", "/apps/qa-key/wallet/topup", `{"amount":1500}`, &w)
	if w.Balance != 2000 {
		t.Fatalf("top up: %+v", w)
	}
	if st, e := qaImport(t, s, oneContact); st != 200 {
		t.Errorf("after top up: %+v", e)
	}
	s.admin(t, "PATCH", "/apps/qa-key/wallet", `{"prepaid":false,"balance":0}`, &w)
	if st, e := qaImport(t, s, oneContact); st != 200 {
		t.Errorf("postpaid: %+v", e)
	}
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/wallet/topup", `{"amount":0}`, 400), "amount")
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/wallet", `{"balance":-1}`, 400), "balance")
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/wallet", `{"expires_at":"tomorrow"}`, 400), "expires_at")
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/wallet", `{"prepaid":"yes"}`, 400), "prepaid")
	s.adminFail(t, "GET", "/apps/nobody/wallet", "", 404)
}

func TestAdminPools(t *testing.T) { eachBackend(t, testAdminPools) }

func testAdminPools(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var p domain.Pool
	s.admin(t, "POST", "/apps/qa-key/pools", `{"key":"POOL_B","numbers":["02873000009"," 02873000008 "]}`, &p)
	if p.Key != "POOL_B" || len(p.Numbers) != 2 || p.Numbers[0].Number != "02873000008" || !p.Numbers[0].Enabled {
		t.Fatalf("created %+v", p)
	}
	s.adminFail(t, "POST", "/apps/qa-key/pools", `{"key":"POOL_B"}`, 409)
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/pools", `{"key":""}`, 400), "key")
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/pools", `{"key":"X","numbers":[""]}`, 400), "numbers")

	var list struct{ Pools []domain.Pool }
	s.admin(t, "GET", "/apps/qa-key/pools", "", &list)
	if len(list.Pools) != 2 || list.Pools[1].Key != "POOL_SYSTEM" || len(list.Pools[1].Numbers) != 2 {
		t.Fatalf("list %+v", list)
	}

	// Disabling every number of the scenario's pool makes operation A 2301.
	for _, n := range []string{"02873000001", "02873000002"} {
		s.admin(t, "POST", "/apps/qa-key/pools/POOL_SYSTEM/numbers/"+n+"/disable", "", &p)
	}
	if p.Numbers[0].Enabled || p.Numbers[1].Enabled {
		t.Fatalf("disabled %+v", p)
	}
	if _, e := qaImport(t, s, oneContact); e.Code != 2301 {
		t.Errorf("no enabled number: %+v", e)
	}
	s.admin(t, "POST", "/apps/qa-key/pools/POOL_SYSTEM/numbers/02873000002/enable", "", &p)
	if st, e := qaImport(t, s, oneContact); st != 200 {
		t.Errorf("number enabled again: %+v", e)
	}
	s.admin(t, "POST", "/apps/qa-key/pools/POOL_SYSTEM/numbers", `{"numbers":["02873000003"]}`, &p)
	if len(p.Numbers) != 3 {
		t.Errorf("added %+v", p)
	}
	s.admin(t, "DELETE", "/apps/qa-key/pools/POOL_SYSTEM/numbers/02873000003", "", &p)
	if len(p.Numbers) != 2 {
		t.Errorf("removed %+v", p)
	}
	s.adminFail(t, "DELETE", "/apps/qa-key/pools/POOL_SYSTEM/numbers/02873000003", "", 404)
	s.adminFail(t, "POST", "/apps/qa-key/pools/POOL_SYSTEM/numbers/0999/enable", "", 404)
	s.adminFail(t, "POST", "/apps/qa-key/pools/POOL_NONE/numbers", `{"numbers":["1"]}`, 404)
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/pools/POOL_B/numbers", `{"numbers":[]}`, 400), "numbers")

	s.admin(t, "GET", "/apps/qa-key/pools/POOL_B", "", &p)
	s.admin(t, "DELETE", "/apps/qa-key/pools/POOL_B", "", nil)
	s.adminFail(t, "GET", "/apps/qa-key/pools/POOL_B", "", 404)
	s.adminFail(t, "DELETE", "/apps/qa-key/pools/POOL_B", "", 404)
	// Another tenant's pool of the same name is another pool.
	s.admin(t, "GET", "/apps/other-key/pools/POOL_SYSTEM", "", &p)
	if len(p.Numbers) != 1 || p.Numbers[0].Number != "02873000401" {
		t.Errorf("other tenant's pool %+v", p)
	}
}

func TestAdminScenarios(t *testing.T) { eachBackend(t, testAdminScenarios) }

func testAdminScenarios(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var sc admin.Scenario
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"sc-new","name":"New","personalized_fields":["ma_kh"],
		"call_config":{"max_concurrent":3,"re_call":{"times":1}}}`, &sc)
	if sc.Status != domain.StatusDraft || sc.Content != "" || sc.CallConfig.MaxConcurrent != 3 || sc.CallConfig.ReCall.Times != 1 ||
		sc.CallConfig.PoolHotlineKey != "POOL_SYSTEM" || sc.CallConfig.MaxDuration != 300 {
		t.Fatalf("created %+v", sc)
	}
	if _, e := s.public(t, "qa-key", "qa-secret", "POST", opA("sc-new"), oneContact); e.Code != 1208 {
		t.Errorf("empty content: %+v", e)
	}
	s.adminFail(t, "POST", "/apps/qa-key/scenarios", `{"id":"sc-new"}`, 409)
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/scenarios", `{"id":"x","status":"LIVE"}`, 400), "status")
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/scenarios", `{"id":"x","call_config":{"call_routing":"FIRST"}}`, 400), "call_config.call_routing")
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/scenarios", `{"id":"x","call_config":{"bogus":1}}`, 400), "call_config")
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/scenarios", `{"id":"x","personalized_fields":["phone_number"]}`, 400), "personalized_fields")

	var generated admin.Scenario
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"name":"No id given","status":"ACTIVE","content":"x"}`, &generated)
	if generated.ID == "" || generated.Status != domain.StatusActive {
		t.Errorf("generated %+v", generated)
	}

	s.admin(t, "PATCH", "/apps/qa-key/scenarios/sc-new", `{"content":"Xin chào {{ma_kh}}","call_config":{"max_duration":60}}`, &sc)
	if sc.Content == "" || sc.CallConfig.MaxDuration != 60 || sc.CallConfig.MaxConcurrent != 3 {
		t.Fatalf("updated %+v", sc)
	}
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", opA("sc-new"), oneContact); st != 200 {
		t.Errorf("content set: %+v", e)
	}
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/scenarios/sc-new", `{"status":"ACTIVE"}`, 400), "status")
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/scenarios/sc-new", `{"id":"y"}`, 400), "id")
	s.adminFail(t, "PATCH", "/apps/qa-key/scenarios/nope", `{"name":"y"}`, 404)

	// docs/design.md#scenario-status-transitions: DRAFT -submit-> REVIEWING -approve-> ACTIVE | -reject-> REJECT; ACTIVE/REJECT -edit-> DRAFT.
	steps := []struct {
		action, want string
		code         int
	}{
		{"approve", "", 409}, {"edit", "", 409}, {"submit", domain.StatusReviewing, 0}, {"submit", "", 409},
		{"reject", domain.StatusReject, 0}, {"approve", "", 409}, {"edit", domain.StatusDraft, 0}, {"submit", domain.StatusReviewing, 0},
		{"approve", domain.StatusActive, 0}, {"reject", "", 409}, {"edit", domain.StatusDraft, 0},
	}
	for _, st := range steps {
		path := "/apps/qa-key/scenarios/sc-new/" + st.action
		if st.code != 0 {
			e := s.adminFail(t, "POST", path, "", st.code)
			if !strings.Contains(e.Message, "Cannot "+st.action) || !strings.Contains(e.Message, sc.Status) {
				t.Errorf("%s from %s: message %q", st.action, sc.Status, e.Message)
			}
			continue
		}
		s.admin(t, "POST", path, "", &sc)
		if sc.Status != st.want {
			t.Fatalf("%s: status %s, want %s", st.action, sc.Status, st.want)
		}
	}
	s.adminFail(t, "POST", "/apps/qa-key/scenarios/nope/submit", "", 404)

	var list struct {
		Scenarios  []admin.Scenario
		TotalCount int `json:"total_count"`
	}
	s.admin(t, "GET", "/apps/qa-key/scenarios?status=DRAFT", "", &list)
	if list.TotalCount != 1 || list.Scenarios[0].ID != "sc-new" {
		t.Errorf("DRAFT list %+v", list)
	}
	s.admin(t, "GET", "/apps/qa-key/scenarios?limit=1&offset=1", "", &list)
	if list.TotalCount != 4 || len(list.Scenarios) != 1 {
		t.Errorf("paged list %+v", list)
	}
	wantField(t, s.adminFail(t, "GET", "/apps/qa-key/scenarios?limit=0", "", 400), "limit")
	wantField(t, s.adminFail(t, "GET", "/apps/qa-key/scenarios?status=x", "", 400), "status")

	s.admin(t, "GET", "/apps/qa-key/scenarios/sc-new", "", &sc)
	s.adminFail(t, "GET", "/apps/other-key/scenarios/sc-new", "", 404)
	s.admin(t, "DELETE", "/apps/qa-key/scenarios/sc-new", "", nil)
	s.adminFail(t, "GET", "/apps/qa-key/scenarios/sc-new", "", 404)
	s.adminFail(t, "DELETE", "/apps/qa-key/scenarios/sc-new", "", 404)
}

func TestAdminCampaigns(t *testing.T) { eachBackend(t, testAdminCampaigns) }

func testAdminCampaigns(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var c domain.Campaign
	s.admin(t, "POST", "/apps/qa-key/campaigns", `{"id":"camp-new","name":"December","scenario_id":"sc-remind"}`, &c)
	if c.ID != "camp-new" || c.ScenarioID != "sc-remind" || c.Paused {
		t.Fatalf("created %+v", c)
	}
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", pathC, `{"campaign_id":"camp-new","contacts":[{"phone_number":"0912345678"}]}`); st != 200 {
		t.Errorf("operation C on the new campaign: %+v", e)
	}
	s.adminFail(t, "POST", "/apps/qa-key/campaigns", `{"id":"camp-new","scenario_id":"sc-remind"}`, 409)
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/campaigns", `{"scenario_id":"sc-other"}`, 400), "scenario_id")
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/campaigns", `{"name":"x"}`, 400), "scenario_id")

	s.admin(t, "POST", "/apps/qa-key/campaigns/camp-new/pause", "", &c)
	if !c.Paused {
		t.Errorf("pause %+v", c)
	}
	s.admin(t, "POST", "/apps/qa-key/campaigns/camp-new/resume", "", &c)
	if c.Paused {
		t.Errorf("resume %+v", c)
	}
	s.adminFail(t, "POST", "/apps/qa-key/campaigns/nope/pause", "", 404)
	s.admin(t, "POST", "/apps/qa-key/campaigns", `{"id":"camp-later","scenario_id":"sc-remind","paused":true}`, &c)
	if !c.Paused {
		t.Errorf("created paused: %+v", c)
	}
	s.adminFail(t, "GET", "/apps/qa-key/campaigns/camp-other", "", 404)

	var list struct{ Campaigns []domain.Campaign }
	s.admin(t, "GET", "/apps/qa-key/campaigns", "", &list)
	if len(list.Campaigns) != 4 {
		t.Errorf("list %+v", list)
	}
	s.admin(t, "GET", "/apps/qa-key/campaigns?scenario_id=sc-second", "", &list)
	if len(list.Campaigns) != 1 || list.Campaigns[0].ID != "camp-2" {
		t.Errorf("list by scenario %+v", list)
	}
	s.admin(t, "GET", "/apps/qa-key/campaigns/camp-1", "", &c)
	if c.Name != "" || c.ScenarioID != "sc-remind" {
		t.Errorf("get %+v", c)
	}
}

func TestAdminWebhookEndpoints(t *testing.T) { eachBackend(t, testAdminWebhookEndpoints) }

func testAdminWebhookEndpoints(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var e domain.WebhookEndpoint
	s.admin(t, "POST", "/apps/qa-key/webhooks", `{"url":"http://127.0.0.1:9/hook","events":["call.completed"]}`, &e)
	if e.ID == "" || domain.CheckWebhookSecret(e.Secret) != nil || !e.Enabled || len(e.Events) != 1 {
		t.Fatalf("created %+v", e)
	}
	first := e.Secret
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/webhooks", `{"url":"ftp://x"}`, 400), "url")
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/webhooks", `{"url":"http://x","secret":"plain"}`, 400), "secret")
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/webhooks", `{"url":"http://x","events":["call.started"]}`, 400), "events")

	var list struct{ Webhooks []domain.WebhookEndpoint }
	s.admin(t, "GET", "/apps/qa-key/webhooks", "", &list)
	if len(list.Webhooks) != 1 || list.Webhooks[0].Secret != "" {
		t.Fatalf("list must not show secrets: %+v", list)
	}
	e = domain.WebhookEndpoint{}
	s.admin(t, "PATCH", "/apps/qa-key/webhooks/"+list.Webhooks[0].ID, `{"enabled":false,"events":[]}`, &e)
	if e.Enabled || len(e.Events) != 0 || e.Secret != "" {
		t.Errorf("updated %+v", e)
	}
	s.admin(t, "POST", "/apps/qa-key/webhooks/"+e.ID+"/rotate-secret", "", &e)
	if e.Secret == first || domain.CheckWebhookSecret(e.Secret) != nil {
		t.Errorf("rotated %+v", e)
	}
	s.admin(t, "GET", "/apps/qa-key/webhooks/"+e.ID, "", &e)
	s.adminFail(t, "GET", "/apps/other-key/webhooks/"+e.ID, "", 404)
	s.adminFail(t, "PATCH", "/apps/other-key/webhooks/"+e.ID, `{"enabled":true}`, 404)
	s.admin(t, "DELETE", "/apps/qa-key/webhooks/"+e.ID, "", nil)
	s.adminFail(t, "DELETE", "/apps/qa-key/webhooks/"+e.ID, "", 404)
}

func TestAdminContactsAndImports(t *testing.T) { eachBackend(t, testAdminContactsAndImports) }

func testAdminContactsAndImports(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	if st, e := qaImport(t, s, `{"contacts":[{"phone_number":"0912345678","ho_ten":"A"},{"phone_number":"12"},"x",{"phone_number":"0912345679"}]}`); st != 200 {
		t.Fatalf("import: %+v", e)
	}
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", pathC, `{"campaign_id":"camp-2","contacts":[{"phone_number":"0987654321"}]}`); st != 200 {
		t.Fatalf("import C: %+v", e)
	}
	s.public(t, "other-key", "other-secret", "POST", opA("sc-other"), oneContact)

	type page struct {
		Contacts   []domain.ContactRecord
		NextCursor string `json:"next_cursor"`
	}
	var p page
	s.admin(t, "GET", "/apps/qa-key/contacts", "", &p)
	if len(p.Contacts) != 3 || p.NextCursor != "" || p.Contacts[0].Phone != "+84987654321" || p.Contacts[0].CampaignID != "camp-2" {
		t.Fatalf("all contacts %+v", p)
	}
	for query, want := range map[string]int{
		"scenario_id=sc-remind": 2, "campaign_id=camp-2": 1, "state=queued": 3, "state=done": 0,
		"phone=0912345678": 1, "phone=%2B84912345679": 1, "outcome=ANSWERED": 0,
		"from=2000-01-01T00:00:00Z": 3, "to=2000-01-01T00:00:00Z": 0,
	} {
		s.admin(t, "GET", "/apps/qa-key/contacts?"+query, "", &p)
		if len(p.Contacts) != want {
			t.Errorf("%s: %d contacts, want %d", query, len(p.Contacts), want)
		}
	}
	// Cursor paging walks every contact once, newest first.
	var seen []string
	for cursor := ""; ; {
		s.admin(t, "GET", "/apps/qa-key/contacts?limit=1&cursor="+cursor, "", &p)
		for _, c := range p.Contacts {
			seen = append(seen, c.Phone)
		}
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	if strings.Join(seen, ",") != "+84987654321,+84912345679,+84912345678" {
		t.Errorf("paged %v", seen)
	}
	wantField(t, s.adminFail(t, "GET", "/apps/qa-key/contacts?state=lost", "", 400), "state")
	wantField(t, s.adminFail(t, "GET", "/apps/qa-key/contacts?phone=12", "", 400), "phone")

	var c admin.ContactWithCalls
	s.admin(t, "GET", "/apps/qa-key/contacts?phone=0912345678", "", &p)
	s.admin(t, "GET", "/apps/qa-key/contacts/"+p.Contacts[0].ID, "", &c)
	if c.Phone != "+84912345678" || c.Fields["ho_ten"] != "A" || c.State != domain.ContactQueued || c.Calls == nil {
		t.Errorf("contact %+v", c)
	}
	s.adminFail(t, "GET", "/apps/other-key/contacts/"+c.ID, "", 404)

	var imports struct{ Imports []domain.ImportRecord }
	s.admin(t, "GET", "/apps/qa-key/imports?scenario_id=sc-remind", "", &imports)
	if len(imports.Imports) != 1 || imports.Imports[0].Requested != 4 || imports.Imports[0].Added != 2 || imports.Imports[0].Skipped != 2 {
		t.Fatalf("imports %+v", imports)
	}
	var im admin.ImportWithSkipped
	s.admin(t, "GET", "/apps/qa-key/imports/"+imports.Imports[0].ID, "", &im)
	if len(im.SkippedContacts) != 2 || im.SkippedContacts[0].Position != 1 || im.SkippedContacts[1].Position != 2 ||
		!strings.Contains(im.SkippedContacts[1].Reason, "not a JSON object") || string(im.SkippedContacts[1].Input) != `"x"` {
		t.Errorf("skipped %+v", im.SkippedContacts)
	}
	s.adminFail(t, "GET", "/apps/other-key/imports/"+im.ID, "", 404)
}

// TestAdminListPaging: the contact and webhook-message lists read the same
// time range and cursor parameters, and refuse them alike.
func TestAdminListPaging(t *testing.T) { eachBackend(t, testAdminListPaging) }

func testAdminListPaging(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	for _, list := range []string{"/apps/qa-key/contacts", "/apps/qa-key/webhook-messages"} {
		s.admin(t, "GET", list+"?from=2000-01-01T00:00:00Z&to=2100-01-01T00:00:00Z&limit=500&cursor=7", "", nil)
		for query, field := range map[string]string{
			"from=yesterday": "from", "to=2000-01-01": "to", "cursor=x": "cursor", "cursor=0": "cursor",
			"limit=0": "limit", "limit=501": "limit", "limit=x&cursor=x": "limit", "from=x&limit=0": "from",
		} {
			wantField(t, s.adminFail(t, "GET", list+"?"+query, "", 400), field)
		}
	}
}

func TestAdminClock(t *testing.T) { eachBackend(t, testAdminClock) }

func testAdminClock(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var clock struct {
		TimeScale float64 `json:"time_scale"`
	}
	s.admin(t, "GET", "/clock", "", &clock)
	if clock.TimeScale != 1 {
		t.Errorf("default time_scale %v", clock.TimeScale)
	}
	s.admin(t, "PUT", "/clock", `{"time_scale":120}`, &clock)
	if clock.TimeScale != 120 || s.m.clock.TimeScale() != 120 {
		t.Errorf("time_scale %v, dialer %v", clock.TimeScale, s.m.clock.TimeScale())
	}
	wantField(t, s.adminFail(t, "PUT", "/clock", `{"time_scale":0}`, 400), "time_scale")
	wantField(t, s.adminFail(t, "PUT", "/clock", `{}`, 400), "time_scale")
}

func TestAdminReset(t *testing.T) { eachBackend(t, testAdminReset) }

func testAdminReset(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	s.admin(t, "POST", "/apps", `{"api_key":"temp-key"}`, nil)
	s.adminFail(t, "POST", "/apps/qa-key/scenarios/sc-remind/reject", "", 409)
	s.admin(t, "POST", "/apps/qa-key/scenarios/sc-remind/edit", "", nil)
	s.admin(t, "PATCH", "/apps/qa-key/wallet", `{"balance":0}`, nil)
	s.admin(t, "POST", "/faults", `{"kind":"error","code":1402}`, nil)
	if _, e := qaImport(t, s, oneContact); e.Code != 1402 {
		t.Fatalf("fault rule did not fire: %+v", e)
	}

	var after struct{ Applications []domain.Application }
	s.admin(t, "POST", "/reset", "", &after)
	if len(after.Applications) != 2 || after.Applications[0].APIKey != "qa-key" || after.Applications[1].APIKey != "other-key" {
		t.Fatalf("after reset %+v", after)
	}
	var faults struct{ Faults []sandbox.FaultRule }
	s.admin(t, "GET", "/faults", "", &faults)
	var count struct{ Count int }
	s.admin(t, "GET", "/journal/count", "", &count)
	var sc admin.Scenario
	s.admin(t, "GET", "/apps/qa-key/scenarios/sc-remind", "", &sc)
	var w domain.Wallet
	s.admin(t, "GET", "/apps/qa-key/wallet", "", &w)
	var contacts struct{ Contacts []domain.ContactRecord }
	s.admin(t, "GET", "/apps/qa-key/contacts", "", &contacts)
	if len(faults.Faults) != 0 || count.Count != 0 || sc.Status != domain.StatusActive || w.Balance != 1000000 || len(contacts.Contacts) != 0 {
		t.Errorf("reset left faults %v, journal %d, status %s, balance %d, contacts %d",
			faults.Faults, count.Count, sc.Status, w.Balance, len(contacts.Contacts))
	}
	if st, e := qaImport(t, s, oneContact); st != 200 {
		t.Errorf("after reset: %+v", e)
	}
	s.adminFail(t, "GET", "/apps/temp-key", "", 404)

	// A fixtures file broken since the start stops the reset before it wipes.
	if err := os.WriteFile(s.m.Config.Fixtures, []byte("[[applications]]\napi_key = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if e := s.adminFail(t, "POST", "/reset", "", 422); !strings.Contains(e.Message, "fixtures.toml") {
		t.Errorf("broken fixtures: %q does not name the file", e.Message)
	}
	if st, e := qaImport(t, s, oneContact); st != 200 {
		t.Errorf("after a failed reset: %+v", e)
	}
}

func TestAdminResetDemo(t *testing.T) { eachBackend(t, testAdminResetDemo) }

func testAdminResetDemo(t *testing.T, backend string) {
	m, _ := startDemoMain(t, backendDatabase(t, backend), "DIALBOX_ADMIN_TOKEN="+testAdminToken)
	defer m.Close()
	s := &testServer{m: m, url: m.URL()}
	demo, err := m.store.DemoApp(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var hooks struct{ Webhooks []domain.WebhookEndpoint }
	s.admin(t, "GET", "/apps/demo-key/webhooks", "", &hooks)
	if len(hooks.Webhooks) != 1 || hooks.Webhooks[0].URL != "/sink/demo" {
		t.Fatalf("demo webhook %+v, want the delivering node's sink", hooks)
	}
	s.admin(t, "DELETE", "/apps/demo-key", "", nil)
	s.admin(t, "POST", "/apps", `{"api_key":"temp-key"}`, nil)
	s.admin(t, "POST", "/reset", "", nil)
	var list struct{ Applications []domain.Application }
	s.admin(t, "GET", "/apps", "", &list)
	if len(list.Applications) != 1 || !list.Applications[0].IsDemo {
		t.Fatalf("after reset %+v", list)
	}
	s.admin(t, "GET", "/apps/demo-key/webhooks", "", &hooks)
	if len(hooks.Webhooks) != 1 {
		t.Errorf("demo webhook after reset %+v", hooks)
	}
	// The demo's secret was deleted with it; a reset while it exists keeps it.
	s.admin(t, "POST", "/reset", "", nil)
	again, _ := m.store.DemoApp(context.Background())
	s.admin(t, "POST", "/reset", "", nil)
	kept, _ := m.store.DemoApp(context.Background())
	if again.APISecret != kept.APISecret || demo.APIKey != kept.APIKey {
		t.Errorf("reset changed the demo secret")
	}
}

func TestJournal(t *testing.T) { eachBackend(t, testJournal) }

func testJournal(t *testing.T, backend string) {
	s := startSandboxOn(t, backend, "DIALBOX_JOURNAL_MAX_ENTRIES=3", "DIALBOX_JOURNAL_MAX_BODY_BYTES=20")
	qaImport(t, s, oneContact)
	s.public(t, "qa-key", "qa-secret", "GET", pathB+"?limit=99", "")
	s.public(t, "other-key", "other-secret", "GET", pathB, "")
	s.do(t, "GET", pathB, "Bearer nonsense", "")
	s.public(t, "qa-key", "qa-secret", "POST", pathC, `{"campaign_id":"camp-1","contacts":[{"phone_number":"0912345678"}]}`)

	type journal struct {
		Requests []sandbox.JournalEntry
		Total    int
	}
	var j journal
	s.admin(t, "GET", "/journal", "", &j)
	if j.Total != 3 || len(j.Requests) != 3 {
		t.Fatalf("journal keeps %d (%d), want the newest 3: %+v", j.Total, len(j.Requests), j.Requests)
	}
	newest, unauth, other := j.Requests[0], j.Requests[1], j.Requests[2]
	if newest.ID != 5 || newest.Operation != "C" || newest.Method != "POST" || newest.Path != pathC || newest.Tenant != "qa-key" ||
		newest.Status != 200 || newest.Code != 1 || newest.RequestBody != `{"campaign_id":"camp` || !newest.RequestTruncated ||
		len(newest.ResponseBody) != 20 || !newest.ResponseTruncated || newest.LatencyMS <= 0 {
		t.Errorf("newest entry %+v", newest)
	}
	if unauth.Status != 401 || unauth.Code != 401 || unauth.Tenant != "" || unauth.RequestBody != "" || unauth.RequestTruncated {
		t.Errorf("unauthenticated entry %+v", unauth)
	}
	if other.Tenant != "other-key" || other.Operation != "B" {
		t.Errorf("other tenant's entry %+v", other)
	}

	for query, want := range map[string]int{
		"operation=B": 2, "tenant=qa-key": 1, "code=401": 1, "status=200": 2, "method=POST": 1,
		"path=" + url.QueryEscape(pathC): 1, "since=2000-01-01T00:00:00Z": 3, "until=2000-01-01T00:00:00Z": 0,
	} {
		var c struct{ Count int }
		s.admin(t, "GET", "/journal/count?"+query, "", &c)
		if c.Count != want {
			t.Errorf("count %s: %d, want %d", query, c.Count, want)
		}
	}
	s.admin(t, "GET", "/journal?limit=1&operation=B", "", &j)
	if len(j.Requests) != 1 || j.Total != 2 {
		t.Errorf("limited %+v", j)
	}
	wantField(t, s.adminFail(t, "GET", "/journal?status=99", "", 400), "status")
	wantField(t, s.adminFail(t, "GET", "/journal?since=now", "", 400), "since")

	s.admin(t, "DELETE", "/journal", "", nil)
	s.admin(t, "GET", "/journal", "", &j)
	if j.Total != 0 {
		t.Errorf("after clear %+v", j)
	}
	// Admin requests are not journaled.
	s.admin(t, "GET", "/apps", "", nil)
	s.admin(t, "GET", "/journal", "", &j)
	if j.Total != 0 {
		t.Errorf("admin request journaled: %+v", j)
	}
}

func TestAdminConfig(t *testing.T) {
	for env, key := range map[string]string{
		"DIALBOX_ADMIN_TOKEN=short":                  "admin.token",
		"DIALBOX_JOURNAL_MAX_ENTRIES=-1":             "journal.max_entries",
		"DIALBOX_JOURNAL_MAX_AGE=0s":                 "journal.max_age",
		"DIALBOX_JOURNAL_MAX_BODY_BYTES=-1":          "journal.max_body_bytes",
		"DIALBOX_SINK_SECRET=nope":                   "sink.secret",
		"DIALBOX_SINK_MAX_MESSAGES=0":                "sink.max_messages",
		"DIALBOX_JOURNAL_MAX_BYTES=1000":             "journal.max_bytes",
		"DIALBOX_SINK_MAX_BODY_BYTES=0":              "sink.max_body_bytes",
		"DIALBOX_SINK_MAX_BYTES=1000":                "sink.max_bytes",
		"DIALBOX_SINK_ACCESS=public":                 "sink.access",
		"DIALBOX_ADMIN_WRONG_TOKENS_PER_ADDRESS=0":   "admin.wrong_tokens_per_address",
		"DIALBOX_ADMIN_WRONG_TOKENS_OVERALL=0":       "admin.wrong_tokens_overall",
		"DIALBOX_ADMIN_WRONG_TOKEN_BACKOFF=500ms":    "admin.wrong_token_backoff",
		"DIALBOX_ADMIN_WRONG_TOKEN_BACKOFF=2m":       "admin.wrong_token_backoff",
		"DIALBOX_HTTP_TRUSTED_PROXIES=10.0.0.1,nope": "http.trusted_proxies",
	} {
		if _, err := config.LoadConfig("", []string{env}); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s: %v, want an error naming %s", env, err, key)
		}
	}
	cfg, err := config.LoadConfig("", []string{"DIALBOX_HTTP_TRUSTED_PROXIES=10.0.0.1, 192.168.0.0/16"})
	if err != nil || len(cfg.HTTP.TrustedProxies) != 2 {
		t.Errorf("two trusted proxies: %v %v", cfg.HTTP.TrustedProxies, err)
	}
}

func TestCLI(t *testing.T) { eachBackend(t, testCLI) }

func testCLI(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	qaImport(t, s, oneContact)
	cli := func(args ...string) string {
		t.Helper()
		var out bytes.Buffer
		if err := run(context.Background(), append(args, "--database", s.db), &out, nil); err != nil {
			t.Fatalf("dialbox %s: %v", strings.Join(args, " "), err)
		}
		return out.String()
	}
	out := cli("app", "create", "--name", "From CLI", "--api-key", "cli-key", "--api-secret", "cli-secret-012345")
	if !strings.Contains(out, "api_key:      cli-key") || !strings.Contains(out, "api_secret:   cli-secret-012345") {
		t.Errorf("app create:\n%s", out)
	}
	token := strings.TrimSpace(out[strings.Index(out, "access_token:")+len("access_token:"):])
	if _, err := jwt.Parse(token, func(*jwt.Token) (any, error) { return []byte("cli-secret-012345"), nil }); err != nil {
		t.Errorf("app create token: %v", err)
	}
	if out := cli("app", "list"); !strings.Contains(out, "cli-key") || !strings.Contains(out, "qa-key") {
		t.Errorf("app list:\n%s", out)
	}
	if out := cli("token", "--app", "cli-key"); strings.Count(out, ".") != 2 {
		t.Errorf("token: %s", out)
	}
	if out := cli("scenario", "list", "--app", "qa-key", "--status", "ACTIVE"); !strings.Contains(out, "sc-remind") || !strings.Contains(out, "sc-second") {
		t.Errorf("scenario list:\n%s", out)
	}
	if out := cli("contacts", "list", "--app", "qa-key", "--phone", "0912345678"); !strings.Contains(out, "+84912345678") || !strings.Contains(out, "queued") {
		t.Errorf("contacts list:\n%s", out)
	}
	for _, args := range [][]string{{"app"}, {"app", "remove"}, {"scenario", "list"}, {"contacts", "list", "--app", "nobody"}} {
		if err := run(context.Background(), append(args, "--database", s.db), &bytes.Buffer{}, nil); err == nil {
			t.Errorf("dialbox %v: no error", args)
		}
	}
	if err := run(context.Background(), []string{"app", "create", "--name", "Again", "--api-key", "cli-key", "--database", s.db}, &bytes.Buffer{}, nil); err == nil ||
		!strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate app create: %v", err)
	}
}

// adminAs sends an admin request as the client a trusted proxy names in
// X-Forwarded-For (none: as the connection's own address).
func (s *testServer) adminAs(t testing.TB, forwardedFor, auth string) (*http.Response, []byte) {
	t.Helper()
	var header []string
	if forwardedFor != "" {
		header = []string{"X-Forwarded-For", forwardedFor}
	}
	resp, b, err := request("GET", s.url+"/admin/v1/apps", auth, "", header...)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

const adminLockedOut = `{"status":0,"code":429,"message":"Too many wrong tokens"}`

// One limit of wrong admin tokens serves the console's sign-in and the
// admin API: wrong tokens from one address on either lock both out, and
// the right token waits only admin.wrong_token_backoff, not the minutes
// the wrong ones wait (docs/admin.md#wrong-tokens).
func TestWrongAdminTokensLimited(t *testing.T) {
	now := time.Now()
	s := startSandboxAt(t, func() time.Time { return now })
	c := newConsoleClient(t, s.url)
	for range 3 {
		if resp := c.signIn("wrong-token-0123456789"); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a wrong sign-in answered %d", resp.StatusCode)
		}
	}
	for range 2 {
		if resp, b := s.adminAs(t, "", "Bearer wrong-token-0123456789"); resp.StatusCode != 401 {
			t.Fatalf("a wrong admin token answered %d %s", resp.StatusCode, b)
		}
	}
	// The sixth wrong token from the address: 429 in the admin API's
	// envelope, and the right token too within the back-off, alike.
	for _, auth := range []string{"Bearer wrong-token-0123456789", adminAuth} {
		resp, b := s.adminAs(t, "", auth)
		if resp.StatusCode != 429 || string(b) != adminLockedOut || resp.Header.Get("Retry-After") != "2" {
			t.Fatalf("locked out, %q answered %d %s (Retry-After %q), want 429 %s with Retry-After 2",
				auth, resp.StatusCode, b, resp.Header.Get("Retry-After"), adminLockedOut)
		}
	}
	if resp := c.signIn(testAdminToken); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("locked out, the right sign-in answered %d (Retry-After %q), want 429 with Retry-After 2",
			resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	// After the back-off the right token is taken, on both.
	now = now.Add(2 * time.Second)
	if resp, b := s.adminAs(t, "", adminAuth); resp.StatusCode != 200 {
		t.Fatalf("after the back-off the right admin token answered %d %s", resp.StatusCode, b)
	}
	if resp := c.signIn(testAdminToken); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("after the back-off the right sign-in answered %d", resp.StatusCode)
	}
	// A wrong one is still refused unchecked within the back-off of the last.
	if resp, _ := s.adminAs(t, "", "Bearer wrong-token-0123456789"); resp.StatusCode != 401 {
		t.Fatalf("a wrong token after the back-off answered %d, want 401", resp.StatusCode)
	}
	if resp, _ := s.adminAs(t, "", "Bearer wrong-token-0123456789"); resp.StatusCode != 429 {
		t.Fatalf("a wrong token within the back-off answered %d, want 429", resp.StatusCode)
	}
}

// Behind a trusted proxy each client address has its own limit, and all
// of them one overall limit; X-Forwarded-For is believed from a trusted
// proxy only, and from its right end; each lockout is logged once.
func TestWrongAdminTokensPerAddressAndOverall(t *testing.T) {
	var logs testtool.LockedBuffer
	dir := t.TempDir()
	fx := filepath.Join(dir, "fixtures.toml")
	if err := os.WriteFile(fx, []byte(adminFixtures), 0o600); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	m := startMain(t, io.Discard, []string{"--database", filepath.Join(dir, "dialbox.db"), "--fixtures", fx},
		[]string{"DIALBOX_ENGINE_ENABLED=false", "DIALBOX_ADMIN_TOKEN=" + testAdminToken,
			"DIALBOX_HTTP_TRUSTED_PROXIES=127.0.0.1", "DIALBOX_ADMIN_WRONG_TOKENS_OVERALL=10"},
		func(m *Main) {
			m.Log, m.now = slog.New(slog.NewTextHandler(&logs, nil)), func() time.Time { return now }
		})
	defer m.Close()
	s := &testServer{m: m, url: m.URL()}
	const wrong = "Bearer wrong-token-0123456789"
	for range 5 {
		if resp, _ := s.adminAs(t, "10.0.0.1", wrong); resp.StatusCode != 401 {
			t.Fatalf("a wrong token from 10.0.0.1 answered %d", resp.StatusCode)
		}
	}
	for range 3 {
		if resp, _ := s.adminAs(t, "10.0.0.1", wrong); resp.StatusCode != 429 {
			t.Fatalf("a sixth wrong token from 10.0.0.1 answered %d, want 429", resp.StatusCode)
		}
	}
	// A client cannot leave its address behind by naming another first.
	if resp, _ := s.adminAs(t, "192.0.2.9, 10.0.0.1", adminAuth); resp.StatusCode != 429 {
		t.Fatalf("10.0.0.1 behind a forged address answered %d, want 429", resp.StatusCode)
	}
	// Another address is not held by 10.0.0.1's guesses.
	if resp, b := s.adminAs(t, "10.0.0.2", adminAuth); resp.StatusCode != 200 {
		t.Fatalf("the right token from 10.0.0.2 answered %d %s", resp.StatusCode, b)
	}
	// Nine wrong tokens so far: the tenth, from a new address, empties the
	// overall limit, and then every address is held.
	if resp, _ := s.adminAs(t, "10.0.0.3", wrong); resp.StatusCode != 401 {
		t.Fatalf("a wrong token from 10.0.0.3 answered %d", resp.StatusCode)
	}
	for _, addr := range []string{"10.0.0.4", "10.0.0.5"} {
		if resp, b := s.adminAs(t, addr, adminAuth); resp.StatusCode != 429 || string(b) != adminLockedOut {
			t.Fatalf("overall locked out, the right token from %s answered %d %s", addr, resp.StatusCode, b)
		}
	}
	now = now.Add(2 * time.Second)
	if resp, b := s.adminAs(t, "10.0.0.4", adminAuth); resp.StatusCode != 200 {
		t.Fatalf("after the back-off the right token answered %d %s", resp.StatusCode, b)
	}
	log := logs.String()
	if n := strings.Count(log, "wrong admin tokens: locked out"); n != 2 ||
		strings.Count(log, "client=10.0.0.1") != 1 || strings.Count(log, "client=overall") != 1 {
		t.Errorf("want one lockout line for 10.0.0.1 and one overall, got %d:\n%s", n, log)
	}

	// Without trusted proxies X-Forwarded-For is the client's own word:
	// every request is the connection's address.
	plain := startSandboxAt(t, func() time.Time { return now })
	for range 5 {
		plain.adminAs(t, "10.0.0.1", wrong)
	}
	if resp, _ := plain.adminAs(t, "10.0.0.2", adminAuth); resp.StatusCode != 429 {
		t.Fatalf("an untrusted X-Forwarded-For escaped the limit: %d", resp.StatusCode)
	}
}

// A token dialbox generated is removed once admin.token is configured: it
// no longer opens the admin API, so it must not stay readable in the
// database and every backup of it (docs/admin.md#token).
func TestConfiguredAdminTokenRemovesTheGenerated(t *testing.T) {
	eachBackend(t, testConfiguredAdminTokenRemovesTheGenerated)
}

func testConfiguredAdminTokenRemovesTheGenerated(t *testing.T, backend string) {
	db := backendDatabase(t, backend)
	m, out := startDemoMain(t, db)
	if !strings.Contains(out, "Admin API token (generated") {
		t.Fatalf("no admin token generated on the first start:\n%s", out)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	generated := regexp.MustCompile(`dbx_admin_[0-9a-f]+`).FindString(out)
	m, _ = startDemoMain(t, db, "DIALBOX_ADMIN_TOKEN="+testAdminToken)
	for _, key := range []string{admin.TokenSetting, admin.TokenPlainSetting} {
		if v, err := m.store.AdminSetting(context.Background(), key); err != nil || v != "" {
			t.Errorf("admin setting %s is %q (%v) with admin.token configured, want it removed", key, v, err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if backend == "sqlite" { // nor left in the file's free pages
		if b, err := os.ReadFile(db); err != nil || bytes.Contains(b, []byte(generated)) {
			t.Errorf("the generated token %q is still in the database file (%v)", generated, err)
		}
	}
}

// An API key is a path segment of the admin API and a claim of every
// token: letters, digits, '.', '_' and '-', starting with a letter or a
// digit, so "..", "/" and control characters never get in. A secret the
// admin API or the CLI is given has at least 16 characters, as
// admin.token (docs/admin.md#routes).
func TestAppKeyAndSecretRules(t *testing.T) {
	s := startSandboxOn(t, "sqlite")
	for _, key := range []string{"..", ".", "a/b", "a\u0001b", "a\tb", "tên", "-x", strings.Repeat("k", 65)} {
		body, _ := json.Marshal(map[string]string{"api_key": key})
		wantField(t, s.adminFail(t, "POST", "/apps", string(body), 400), "api_key")
		if _, err := cliRun(s.db, "app", "create", "--name", "x", "--api-key", key); err == nil || !strings.Contains(err.Error(), "--api-key") {
			t.Errorf("app create --api-key %q: %v", key, err)
		}
	}
	s.admin(t, "POST", "/apps", `{"api_key":"Crm.staging_2-b","api_secret":"0123456789abcdef"}`, nil)
	for _, secret := range []string{"s", "0123456789abcde"} {
		wantField(t, s.adminFail(t, "POST", "/apps", `{"api_secret":"`+secret+`"}`, 400), "api_secret")
		wantField(t, s.adminFail(t, "PATCH", "/apps/Crm.staging_2-b", `{"api_secret":"`+secret+`"}`, 400), "api_secret")
		if _, err := cliRun(s.db, "app", "create", "--name", "x", "--api-secret", secret); err == nil || !strings.Contains(err.Error(), "--api-secret") {
			t.Errorf("app create --api-secret %q: %v", secret, err)
		}
	}
	fixtures := writeFile(t, "fixtures.toml", "[[applications]]\napi_key = \"..\"\napi_secret = \"qa-secret\"\n")
	if _, err := store.LoadFixtures(fixtures); err == nil || !strings.Contains(err.Error(), "applications[0].api_key") {
		t.Errorf("fixtures with api_key \"..\": %v", err)
	}
}

// A pool of more numbers than one INSERT carries (insertHotlines) keeps
// each number once, in byte order, on both stores; adding numbers already
// there leaves them as they are.
func TestBackendPoolOfManyNumbers(t *testing.T) {
	forEachBackend(t, func() []*store.FixtureApp { return []*store.FixtureApp{engTenant()} }, func(t *testing.T, s Store, ids []int64) {
		ctx := context.Background()
		var numbers []string
		for i := 1200; i >= 0; i-- {
			numbers = append(numbers, fmt.Sprintf("0287%07d", i))
		}
		numbers = append(numbers, numbers[0], numbers[700]) // twice, in other statements
		if err := s.CreatePool(ctx, ids[0], "big", "", numbers, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := s.SetHotlineEnabled(ctx, ids[0], "big", numbers[3], false); err != nil {
			t.Fatal(err)
		}
		if err := s.AddHotlines(ctx, ids[0], "big", []string{numbers[3], "02879999999"}); err != nil {
			t.Fatal(err)
		}
		pools, err := s.Pools(ctx, ids[0], "big")
		if err != nil {
			t.Fatal(err)
		}
		if len(pools) != 1 || len(pools[0].Numbers) != 1202 {
			t.Fatalf("pools = %d, numbers = %d; want 1 pool of 1202", len(pools), len(pools[0].Numbers))
		}
		for i, h := range pools[0].Numbers {
			want := fmt.Sprintf("0287%07d", i)
			if i == 1201 {
				want = "02879999999"
			}
			if h.Number != want || h.Enabled != (want != numbers[3]) {
				t.Fatalf("number %d = %+v, want %s enabled %v", i, h, want, want != numbers[3])
			}
		}
	})
}
