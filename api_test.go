package main

// The public API driven over HTTP against the real server (Main on
// 127.0.0.1:0, a temp database, a fixtures file of several tenants in the
// exact docs/design.md#fixtures format). Cases are tables that read like the spec's.

import (
	"bytes"
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/testtool"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
)

// testFixtures are the tenants every API test starts with. Each tenant is
// there for the errors it can produce: qa (the happy path, empty content,
// empty or missing hotline pool), expired (1104), poor (1105), postpaid (no
// wallet checks), other (tenant isolation, and a scenario id qa also uses),
// disabled (1201 once disabled), many (55 scenarios for operation B).
var testFixtures = `
[[applications]]
name = "QA tenant"
api_key = "qa-key"
api_secret = "qa-secret"
  [applications.wallet]
  prepaid = true             # false: postpaid, no balance checks
  balance = 1000000          # VND
  expires_at = 2099-01-01T00:00:00Z
  price_per_call = 1000
  price_per_minute = 800
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000001", "02873000002"]
  [[applications.hotline_pools]]
  key = "POOL_EMPTY"
  numbers = []
  [[applications.scenarios]]
  id = "sc-remind"
  name = "Payment reminder"
  description = "Reminds customers of a due payment"
  status = "ACTIVE"
  content = "Xin chào {{danh_xung}} {{ho_ten}} ..."
  personalized_fields = ["danh_xung", "ho_ten"]
    [applications.scenarios.call_config]
    pool_hotline_key = "POOL_SYSTEM"
    max_concurrent = 10
    [applications.scenarios.call_config.re_call]
    times = 2
    delay = 300
    is_busy = true
    is_no_answer = true
  [[applications.scenarios]]
  id = "sc-dup"
  name = "Duplicates allowed"
  status = "ACTIVE"
  content = "Xin chào {{ho_ten}}"
  personalized_fields = ["ho_ten"]
    [applications.scenarios.call_config]
    allow_duplicate_phone = true
  [[applications.scenarios]]
  id = "sc-empty"
  name = "No content yet"
  status = "ACTIVE"
  content = ""
  [[applications.scenarios]]
  id = "sc-nopool"
  name = "Pool without numbers"
  status = "ACTIVE"
  content = "Xin chào"
    [applications.scenarios.call_config]
    pool_hotline_key = "POOL_EMPTY"
  [[applications.scenarios]]
  id = "sc-missingpool"
  name = "Pool that does not exist"
  status = "ACTIVE"
  content = "Xin chào"
    [applications.scenarios.call_config]
    pool_hotline_key = "POOL_NONE"
  [[applications.scenarios]]
  id = "sc-draft"
  name = "Draft"
  status = "DRAFT"
  content = "Xin chào"
  [[applications.scenarios]]
  id = "sc-load"
  name = "Load"
  status = "ACTIVE"
  content = "Xin chào {{ho_ten}}"
  personalized_fields = ["ho_ten"]
  [[applications.campaigns]]
  id = "camp-1"
  name = "November reminders"
  scenario_id = "sc-remind"
  [[applications.campaigns]]
  id = "camp-dup"
  scenario_id = "sc-dup"
  [[applications.campaigns]]
  id = "camp-empty"
  scenario_id = "sc-empty"
  [[applications.campaigns]]
  id = "camp-nopool"
  scenario_id = "sc-nopool"
  [[applications.webhooks]]
  url = "http://127.0.0.1:9000/hook"
  secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
  events = ["call.completed", "contact.completed"]

[[applications]]
name = "Expired tenant"
api_key = "expired-key"
api_secret = "expired-secret"
  [applications.wallet]
  prepaid = true
  balance = 1000000
  expires_at = 2020-01-01T00:00:00Z
  price_per_call = 1000
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000101"]
  [[applications.scenarios]]
  id = "sc-exp"
  status = "ACTIVE"
  content = "Xin chào"
  [[applications.scenarios]]
  id = "sc-exp-empty"
  status = "ACTIVE"
  content = ""
  [[applications.scenarios]]
  id = "sc-exp-nopool"
  status = "ACTIVE"
  content = "Xin chào"
    [applications.scenarios.call_config]
    pool_hotline_key = "POOL_NONE"
  [[applications.campaigns]]
  id = "camp-exp"
  scenario_id = "sc-exp"

[[applications]]
name = "Poor tenant"
api_key = "poor-key"
api_secret = "poor-secret"
  [applications.wallet]
  prepaid = true
  balance = 2000             # exactly two calls at 1000
  expires_at = 2099-01-01T00:00:00Z
  price_per_call = 1000
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000201"]
  [[applications.scenarios]]
  id = "sc-poor"
  status = "ACTIVE"
  content = "Xin chào"
  [[applications.campaigns]]
  id = "camp-poor"
  scenario_id = "sc-poor"

[[applications]]
name = "Postpaid tenant"
api_key = "post-key"
api_secret = "post-secret"
  [applications.wallet]
  prepaid = false
  balance = 0
  expires_at = 2020-01-01T00:00:00Z
  price_per_call = 1000
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000301"]
  [[applications.scenarios]]
  id = "sc-post"
  status = "ACTIVE"
  content = "Xin chào"
  [[applications.campaigns]]
  id = "camp-post"
  scenario_id = "sc-post"

[[applications]]
name = "Other tenant"
api_key = "other-key"
api_secret = "other-secret"
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000401"]
  [[applications.scenarios]]
  id = "sc-other"
  name = "Other's scenario"
  status = "ACTIVE"
  content = "Xin chào"
  [[applications.scenarios]]
  id = "sc-remind"
  name = "Other's reminder"
  status = "REVIEWING"
  content = "Mã khách hàng {{ma_kh}}"
  personalized_fields = ["ma_kh"]
  [[applications.campaigns]]
  id = "camp-other"
  scenario_id = "sc-other"

[[applications]]
name = "Disabled tenant"
api_key = "disabled-key"
api_secret = "disabled-secret"
`

// manyScenarios is a tenant with 55 scenarios, statuses in turn DRAFT,
// ACTIVE, REVIEWING, REJECT (14, 14, 14, 13), all created in the same
// millisecond so the order is by id.
func manyScenarios() string {
	var b strings.Builder
	b.WriteString("\n[[applications]]\nname = \"Many scenarios\"\napi_key = \"many-key\"\napi_secret = \"many-secret\"\n")
	statuses := []string{"DRAFT", "ACTIVE", "REVIEWING", "REJECT"}
	for i := 0; i < 55; i++ {
		fmt.Fprintf(&b, "  [[applications.scenarios]]\n  id = \"m-%02d\"\n  name = \"Scenario %02d\"\n  description = \"d%02d\"\n  status = %q\n  content = \"x\"\n",
			i, i, i, statuses[i%4])
	}
	return b.String()
}

const (
	pathA = "/api/v1/public-api/scenarios/%s/calls"
	pathB = "/api/v1/public-api/scenarios"
	pathC = "/api/v1/public-api/campaign"
)

func opA(scenario string) string { return fmt.Sprintf(pathA, scenario) }

// apiCase is one row: a request and the answer the spec and docs/design.md fix.
type apiCase struct {
	name   string
	auth   string // Authorization header; "" means the qa tenant's token
	method string // "" means POST
	path   string
	body   string
	status int    // HTTP status in the "semantic" mode
	want   string // exact body; every contact_id written as <id>
	// invalid, for a 400, lists the fields its details must name (the
	// reasons are free text, so only the fields are compared).
	invalid []string
}

var contactIDField = regexp.MustCompile(`"contact_id":"([^"]*)"`)

// run sends the case and compares the answer. In always200 mode every
// answer must have HTTP status 200 and the same body. seen collects the
// contact_ids handed out, which must all be distinct UUIDs.
func (c apiCase) run(t *testing.T, s *testServer, tokens map[string]string, always200 bool, seen map[string]bool) {
	t.Helper()
	auth := c.auth
	if auth == "" {
		auth = tokens["qa"]
	} else if tok, ok := tokens[auth]; ok {
		auth = tok
	} else if auth == noAuth {
		auth = ""
	}
	method := c.method
	if method == "" {
		method = http.MethodPost
	}
	status, body := s.do(t, method, c.path, auth, c.body)
	wantStatus := c.status
	if always200 {
		wantStatus = http.StatusOK
	}
	if status != wantStatus {
		t.Errorf("HTTP status %d, want %d; body %s", status, wantStatus, body)
	}
	if ct := s.lastContentType; !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want JSON (spec 4)", ct)
	}
	if c.invalid != nil {
		checkValidationFailed(t, body, c.invalid...)
		return
	}
	got := contactIDField.ReplaceAllStringFunc(string(body), func(m string) string {
		id := contactIDField.FindStringSubmatch(m)[1]
		if _, err := uuid.Parse(id); err != nil {
			t.Errorf("contact_id %q is not a UUID", id)
		}
		if seen[id] {
			t.Errorf("contact_id %s handed out twice", id)
		}
		seen[id] = true
		return `"contact_id":"<id>"`
	})
	if got != c.want {
		t.Errorf("body\n got %s\nwant %s", got, c.want)
	}
}

const noAuth = "-"

// checkValidationFailed checks a 400 body: status 0, code 400, the message
// spelled as the spec does, and details naming exactly the given fields.
func checkValidationFailed(t testing.TB, body []byte, fields ...string) {
	t.Helper()
	var e struct {
		Status  *int
		Code    int
		Message string
		Details []domain.FieldError
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("body %s: %v", body, err)
	}
	var got []string
	for _, d := range e.Details {
		if d.Reason == "" {
			t.Errorf("detail %+v has no reason", d)
		}
		got = append(got, d.Field)
	}
	if e.Status == nil || *e.Status != 0 || e.Code != 400 || e.Message != "Validation Failed" || !slices.Equal(got, fields) {
		t.Errorf("body %s, want status 0, code 400, Validation Failed with details for %v", body, fields)
	}
}

func testTokens(t testing.TB) map[string]string {
	return map[string]string{
		"qa":       bearer(t, "qa-key", "qa-secret"),
		"expired":  bearer(t, "expired-key", "expired-secret"),
		"poor":     bearer(t, "poor-key", "poor-secret"),
		"postpaid": bearer(t, "post-key", "post-secret"),
		"other":    bearer(t, "other-key", "other-secret"),
		"many":     bearer(t, "many-key", "many-secret"),
		"bad":      "Bearer not-a-jwt",
	}
}

// Error bodies, byte for byte as the spec's tables give them (docs/design.md#the-specs-envelope-codes-and-messages-spelling-included).
const (
	body401     = `{"status":0,"code":401,"message":"Unauthorized"}`
	body1104    = `{"status":0,"code":1104,"message":"Portal wallet is expired"}`
	body1105    = `{"status":0,"code":1105,"message":"Portal wallet is out of money"}`
	body1201    = `{"status":0,"code":1201,"message":"Application is not found"}`
	body1208    = `{"status":0,"code":1208,"message":"Scenario content is empty"}`
	body1402    = `{"status":0,"code":1402,"message":"Import contacts failed"}`
	body1403    = `{"status":0,"code":1403,"message":"All contacts is invalid"}`
	body2301    = `{"status":0,"code":2301,"message":"Pool hotline is not available"}`
	body9999A   = `{"status":0,"code":9999,"message":"Unknown error"}`
	body9999B   = `{"status":0,"code":9999,"message":"Uknown error"}`
	body500C    = `{"status":0,"code":500,"message":"Lỗi hệ thống"}`
	body3001    = `{"status":0,"code":3001,"message":"Scenario is not found"}`
	body404Camp = `{"status":0,"code":404,"message":"Campaign is not found"}`
	body413     = `{"status":0,"code":413,"message":"Too many contacts"}`
)

// operationACases follow spec 4.1 and 7.1 and docs/design.md#the-three-operations. They share one
// server and run in order: phones are distinct per case unless a case is
// about duplicates.
var operationACases = []apiCase{
	// 4.1 rule 1, 2.2: valid contacts come back with a contact_id, the
	// phone under so_dien_thoai in E.164, personalization echoed.
	{name: "rule 1: a valid contact is added with its contact_id", path: opA("sc-remind"),
		body:   `{"contacts":[{"phone_number":"0910000001","danh_xung":"Anh","ho_ten":"Nguyen Van A"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"Anh","ho_ten":"Nguyen Van A","so_dien_thoai":"+84910000001"}]}`},
	{name: "phone 0912345678, 84912345678 and +84 912 345 678 are all +84912345678", path: opA("sc-dup"),
		body:   `{"contacts":[{"phone_number":"0912345678"},{"phone_number":"84912345678"},{"phone_number":"+84 912 345 678"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","ho_ten":"","so_dien_thoai":"+84912345678"},{"contact_id":"<id>","ho_ten":"","so_dien_thoai":"+84912345678"},{"contact_id":"<id>","ho_ten":"","so_dien_thoai":"+84912345678"}]}`},
	{name: "2.1 rule 1: a personalized field the contact leaves out is echoed as empty", path: opA("sc-remind"),
		body:   `{"contacts":[{"phone_number":"0910000002","ho_ten":"Tran Thi B"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"Tran Thi B","so_dien_thoai":"+84910000002"}]}`},
	{name: "2.1 rule 1: tags are open, extra keys are echoed", path: opA("sc-remind"),
		body:   `{"contacts":[{"phone_number":"0910000003","danh_xung":"Chị","ho_ten":"Le C","ma_don":"DH-42"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"Chị","ho_ten":"Le C","ma_don":"DH-42","so_dien_thoai":"+84910000003"}]}`},
	{name: "numbers given as personalization values are echoed as strings", path: opA("sc-remind"),
		body:   `{"contacts":[{"phone_number":"0910000004","ho_ten":123,"so_tien":1500000.5}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"123","so_dien_thoai":"+84910000004","so_tien":"1500000.5"}]}`},
	{name: "rule 4: partial success leaves the invalid contact out, keeps request order", path: opA("sc-remind"),
		body:   `{"contacts":[{"phone_number":"0910000006","ho_ten":"F"},{"phone_number":"12345","ho_ten":"bad"},{"phone_number":"0910000005","ho_ten":"E"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"F","so_dien_thoai":"+84910000006"},{"contact_id":"<id>","danh_xung":"","ho_ten":"E","so_dien_thoai":"+84910000005"}]}`},
	{name: "a contact that is not an object, has no phone, a numeric phone or a boolean value is skipped", path: opA("sc-remind"),
		body:   `{"contacts":["0910000007",{"ho_ten":"no phone"},{"phone_number":910000008},{"phone_number":"0910000009","ho_ten":true},{"phone_number":"0910000010","ho_ten":{"a":1}},{"phone_number":"0910000011"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"","so_dien_thoai":"+84910000011"}]}`},
	{name: "a phone repeated within the request, in another format, is skipped", path: opA("sc-remind"),
		body:   `{"contacts":[{"phone_number":"0910000020","ho_ten":"first"},{"phone_number":"+84 910 000 020","ho_ten":"again"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"first","so_dien_thoai":"+84910000020"}]}`},
	{name: "a phone already queued for the scenario is skipped", path: opA("sc-remind"),
		body:   `{"contacts":[{"phone_number":"84910000020"},{"phone_number":"0910000021"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"","so_dien_thoai":"+84910000021"}]}`},
	{name: "1403 when every contact is already queued", path: opA("sc-remind"),
		body:   `{"contacts":[{"phone_number":"0910000020"},{"phone_number":"0910000021"}]}`,
		status: 422, want: body1403},
	{name: "the same phone queued for another scenario is not a duplicate", path: opA("sc-draft"),
		body:   `{"contacts":[{"phone_number":"0910000020"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","so_dien_thoai":"+84910000020"}]}`},
	{name: "allow_duplicate_phone = true: repeats within the request are added", path: opA("sc-dup"),
		body:   `{"contacts":[{"phone_number":"0910000030","ho_ten":"a"},{"phone_number":"0910000030","ho_ten":"b"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","ho_ten":"a","so_dien_thoai":"+84910000030"},{"contact_id":"<id>","ho_ten":"b","so_dien_thoai":"+84910000030"}]}`},
	{name: "allow_duplicate_phone = true: a phone already queued is added again", path: opA("sc-dup"),
		body:   `{"contacts":[{"phone_number":"0910000030","ho_ten":"c"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","ho_ten":"c","so_dien_thoai":"+84910000030"}]}`},
	{name: "a DRAFT scenario with content takes contacts (they wait)", path: opA("sc-draft"),
		body:   `{"contacts":[{"phone_number":"0910000031"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","so_dien_thoai":"+84910000031"}]}`},
	{name: "postpaid: neither expiry nor balance is checked", auth: "postpaid", path: opA("sc-post"),
		body:   `{"contacts":[{"phone_number":"0910000032"},{"phone_number":"0910000033"},{"phone_number":"0910000034"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","so_dien_thoai":"+84910000032"},{"contact_id":"<id>","so_dien_thoai":"+84910000033"},{"contact_id":"<id>","so_dien_thoai":"+84910000034"}]}`},
	{name: "1105 counts only valid contacts: two valid of five fit a balance of two calls", auth: "poor", path: opA("sc-poor"),
		body:   `{"contacts":[{"phone_number":"0910000040"},{"phone_number":"1"},{"phone_number":"0910000041"},{"phone_number":"x"},{"phone_number":"0910000040"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","so_dien_thoai":"+84910000040"},{"contact_id":"<id>","so_dien_thoai":"+84910000041"}]}`},

	// 7.1, row by row.
	{name: "7.1 401 Unauthorized", auth: "bad", path: opA("sc-remind"),
		body: `{"contacts":[{"phone_number":"0910000050"}]}`, status: 401, want: body401},
	{name: "7.1 1104 Portal wallet is expired", auth: "expired", path: opA("sc-exp"),
		body: `{"contacts":[{"phone_number":"0910000051"}]}`, status: 402, want: body1104},
	{name: "7.1 1105 Portal wallet is out of money", auth: "poor", path: opA("sc-poor"),
		body: `{"contacts":[{"phone_number":"0910000052"},{"phone_number":"0910000053"},{"phone_number":"0910000054"}]}`, status: 402, want: body1105},
	{name: "7.1 1201 Application is not found", auth: "Bearer " + mustSign(jwt.MapClaims{"apiKey": "no-such-key"}, "whatever"), path: opA("sc-remind"),
		body: `{"contacts":[{"phone_number":"0910000055"}]}`, status: 401, want: body1201},
	{name: "7.1 1208 Scenario content is empty", path: opA("sc-empty"),
		body: `{"contacts":[{"phone_number":"0910000056"}]}`, status: 422, want: body1208},
	{name: "7.1 1403 All contacts is invalid", path: opA("sc-remind"),
		body: `{"contacts":[{"phone_number":"12345"},{"phone_number":"abc"},{"phone_number":""}]}`, status: 422, want: body1403},
	{name: "7.1 2301 Pool hotline is not available (pool has no number)", path: opA("sc-nopool"),
		body: `{"contacts":[{"phone_number":"0910000057"}]}`, status: 503, want: body2301},
	{name: "7.1 2301 Pool hotline is not available (pool does not exist)", path: opA("sc-missingpool"),
		body: `{"contacts":[{"phone_number":"0910000058"}]}`, status: 503, want: body2301},

	// docs/design.md#extensions-to-the-specs-codes
	{name: "3001 Scenario is not found", path: opA("sc-nope"),
		body: `{"contacts":[{"phone_number":"0910000059"}]}`, status: 404, want: body3001},
	{name: "3001 for another tenant's scenario", path: opA("sc-other"),
		body: `{"contacts":[{"phone_number":"0910000060"}]}`, status: 404, want: body3001},
	{name: "400 body is not JSON", path: opA("sc-remind"), body: `contacts=0910000061`, status: 400, invalid: []string{"body"}},
	{name: "400 body is a JSON array", path: opA("sc-remind"), body: `[{"phone_number":"0910000061"}]`, status: 400, invalid: []string{"body"}},
	{name: "400 no body", path: opA("sc-remind"), body: ``, status: 400, invalid: []string{"body"}},
	{name: "400 trailing data after the object", path: opA("sc-remind"), body: `{"contacts":[{"phone_number":"0910000061"}]} {}`, status: 400, invalid: []string{"body"}},
	{name: "400 contacts missing", path: opA("sc-remind"), body: `{"contact":[{"phone_number":"0910000061"}]}`, status: 400, invalid: []string{"contacts"}},
	{name: "400 contacts null", path: opA("sc-remind"), body: `{"contacts":null}`, status: 400, invalid: []string{"contacts"}},
	{name: "400 contacts not an array", path: opA("sc-remind"), body: `{"contacts":{"phone_number":"0910000061"}}`, status: 400, invalid: []string{"contacts"}},
	{name: "400 contacts empty", path: opA("sc-remind"), body: `{"contacts":[]}`, status: 400, invalid: []string{"contacts"}},

	// docs/design.md#order-of-checks-for-operations-a-and-c, each pair showing which comes first.
	{name: "order: 401 before 3001", auth: "bad", path: opA("sc-nope"), body: `nonsense`, status: 401, want: body401},
	{name: "order: 3001 before 400", path: opA("sc-nope"), body: `nonsense`, status: 404, want: body3001},
	{name: "order: 400 before 1208", path: opA("sc-empty"), body: `nonsense`, status: 400, invalid: []string{"body"}},
	{name: "order: 1208 before 1104", auth: "expired", path: opA("sc-exp-empty"),
		body: `{"contacts":[{"phone_number":"0910000062"}]}`, status: 422, want: body1208},
	{name: "order: 1104 before 2301", auth: "expired", path: opA("sc-exp-nopool"),
		body: `{"contacts":[{"phone_number":"0910000063"}]}`, status: 402, want: body1104},
	{name: "order: 1104 before 1403", auth: "expired", path: opA("sc-exp"),
		body: `{"contacts":[{"phone_number":"1"}]}`, status: 402, want: body1104},
	{name: "order: 2301 before 1403", path: opA("sc-nopool"),
		body: `{"contacts":[{"phone_number":"1"}]}`, status: 503, want: body2301},
	{name: "order: 1403 before 1105", auth: "poor", path: opA("sc-poor"),
		body: `{"contacts":[{"phone_number":"1"},{"phone_number":"2"},{"phone_number":"3"}]}`, status: 422, want: body1403},
}

// operationCCases follow spec 4.3 and 7.3 and docs/design.md#operation-c-finds-the-campaign-first (the campaign's
// scenario checks apply).
var operationCCases = []apiCase{
	{name: "4.3: contacts are added to the campaign with a contact_id", path: pathC,
		body:   `{"campaign_id":"camp-1","contacts":[{"phone_number":"0920000001","danh_xung":"Anh","ho_ten":"Nguyen Van A"},{"phone_number":"+84 920 000 002","ho_ten":42}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"Anh","ho_ten":"Nguyen Van A","so_dien_thoai":"+84920000001"},{"contact_id":"<id>","danh_xung":"","ho_ten":"42","so_dien_thoai":"+84920000002"}]}`},
	{name: "partial success", path: pathC,
		body:   `{"campaign_id":"camp-1","contacts":[{"phone_number":"bad"},{"phone_number":"0920000003","note":"x"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"","note":"x","so_dien_thoai":"+84920000003"}]}`},
	{name: "a phone queued for the campaign's scenario (by operation A) is a duplicate", path: pathC,
		body:   `{"campaign_id":"camp-1","contacts":[{"phone_number":"0910000001"},{"phone_number":"0920000004"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"","so_dien_thoai":"+84920000004"}]}`},
	{name: "allow_duplicate_phone = true on the campaign's scenario", path: pathC,
		body:   `{"campaign_id":"camp-dup","contacts":[{"phone_number":"0920000005"},{"phone_number":"0920000005"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","ho_ten":"","so_dien_thoai":"+84920000005"},{"contact_id":"<id>","ho_ten":"","so_dien_thoai":"+84920000005"}]}`},
	{name: "postpaid campaign", auth: "postpaid", path: pathC,
		body: `{"campaign_id":"camp-post","contacts":[{"phone_number":"0920000006"}]}`, status: 200,
		want: `{"status":1,"result":[{"contact_id":"<id>","so_dien_thoai":"+84920000006"}]}`},

	// 7.3, row by row.
	{name: "7.3 401 Unauthorized", auth: "bad", path: pathC,
		body: `{"campaign_id":"camp-1","contacts":[{"phone_number":"0920000010"}]}`, status: 401, want: body401},
	{name: "7.3 1201 Application is not found", auth: "Bearer " + mustSign(jwt.MapClaims{"apiKey": "no-such-key"}, "whatever"), path: pathC,
		body: `{"campaign_id":"camp-1","contacts":[{"phone_number":"0920000011"}]}`, status: 401, want: body1201},
	{name: "7.3 1403 All contacts is invalid (bad phone_number)", path: pathC,
		body: `{"campaign_id":"camp-1","contacts":[{"phone_number":"0"},{"ho_ten":"no phone"}]}`, status: 422, want: body1403},

	// The scenario's checks through the campaign (docs/design.md#operation-c-finds-the-campaign-first).
	{name: "1208 through the campaign", path: pathC,
		body: `{"campaign_id":"camp-empty","contacts":[{"phone_number":"0920000012"}]}`, status: 422, want: body1208},
	{name: "1104 through the campaign", auth: "expired", path: pathC,
		body: `{"campaign_id":"camp-exp","contacts":[{"phone_number":"0920000013"}]}`, status: 402, want: body1104},
	{name: "1105 through the campaign", auth: "poor", path: pathC,
		body: `{"campaign_id":"camp-poor","contacts":[{"phone_number":"0920000014"},{"phone_number":"0920000015"},{"phone_number":"0920000016"}]}`, status: 402, want: body1105},
	{name: "2301 through the campaign", path: pathC,
		body: `{"campaign_id":"camp-nopool","contacts":[{"phone_number":"0920000017"}]}`, status: 503, want: body2301},

	// docs/design.md#extensions-to-the-specs-codes
	{name: "404 Campaign is not found", path: pathC,
		body: `{"campaign_id":"camp-nope","contacts":[{"phone_number":"0920000018"}]}`, status: 404, want: body404Camp},
	{name: "404 for another tenant's campaign", path: pathC,
		body: `{"campaign_id":"camp-other","contacts":[{"phone_number":"0920000019"}]}`, status: 404, want: body404Camp},
	{name: "400 campaign_id missing", path: pathC, body: `{"contacts":[{"phone_number":"0920000020"}]}`, status: 400, invalid: []string{"campaign_id"}},
	{name: "400 campaign_id not a string", path: pathC, body: `{"campaign_id":1,"contacts":[{"phone_number":"0920000020"}]}`, status: 400, invalid: []string{"campaign_id"}},
	{name: "400 body is not JSON", path: pathC, body: `{"campaign_id":"camp-1",`, status: 400, invalid: []string{"body"}},
	{name: "400 contacts missing", path: pathC, body: `{"campaign_id":"camp-1"}`, status: 400, invalid: []string{"contacts"}},
	{name: "400 contacts not an array", path: pathC, body: `{"campaign_id":"camp-1","contacts":"0920000020"}`, status: 400, invalid: []string{"contacts"}},
	{name: "400 contacts empty", path: pathC, body: `{"campaign_id":"camp-1","contacts":[]}`, status: 400, invalid: []string{"contacts"}},

	// docs/design.md#operation-c-finds-the-campaign-first: the campaign must exist before the contacts are judged.
	{name: "order: 401 before 404", auth: "bad", path: pathC, body: `{"campaign_id":"camp-nope"}`, status: 401, want: body401},
	{name: "order: 404 before invalid contacts (400)", path: pathC, body: `{"campaign_id":"camp-nope","contacts":"x"}`, status: 404, want: body404Camp},
	{name: "order: 404 before missing contacts (400)", path: pathC, body: `{"campaign_id":"camp-nope"}`, status: 404, want: body404Camp},
	{name: "order: 400 before 1208", path: pathC, body: `{"campaign_id":"camp-empty","contacts":[]}`, status: 400, invalid: []string{"contacts"}},
	{name: "order: 2301 before 1403", path: pathC, body: `{"campaign_id":"camp-nopool","contacts":[{"phone_number":"1"}]}`, status: 503, want: body2301},
}

// operationBCases follow spec 4.2, 7.2 and 8 and docs/design.md#operation-bs-parameters,
// against the "many" tenant's 55 scenarios (all created together, so by id).
var operationBCases = func() []apiCase {
	page := func(total int, ids ...int) string {
		var parts []string
		for _, i := range ids {
			parts = append(parts, fmt.Sprintf(`{"id":"m-%02d","name":"Scenario %02d"}`, i, i))
		}
		return fmt.Sprintf(`{"status":1,"result":{"scenarios":[%s],"total_count":%d}}`, strings.Join(parts, ","), total)
	}
	seq := func(from, to, step int) []int {
		var out []int
		for i := from; i <= to; i += step {
			out = append(out, i)
		}
		return out
	}
	b := func(q string) string { return pathB + "?" + q }
	return []apiCase{
		{name: "limit defaults to 10, offset to 0; total_count counts all", auth: "many", method: "GET", path: b("fields=name"),
			status: 200, want: page(55, seq(0, 9, 1)...)},
		{name: "limit 50 is the maximum", auth: "many", method: "GET", path: b("fields=name&limit=50"),
			status: 200, want: page(55, seq(0, 49, 1)...)},
		{name: "offset moves the page, total_count does not change", auth: "many", method: "GET", path: b("fields=name&limit=3&offset=52"),
			status: 200, want: page(55, 52, 53, 54)},
		{name: "offset past the end: no scenarios, total_count still counts", auth: "many", method: "GET", path: b("fields=name&offset=1000"),
			status: 200, want: `{"status":1,"result":{"scenarios":[],"total_count":55}}`},
		{name: "status=DRAFT", auth: "many", method: "GET", path: b("fields=name&status=DRAFT&limit=3"),
			status: 200, want: page(14, 0, 4, 8)},
		{name: "status=ACTIVE", auth: "many", method: "GET", path: b("fields=name&status=ACTIVE&limit=50"),
			status: 200, want: page(14, seq(1, 53, 4)...)},
		{name: "status=REVIEWING", auth: "many", method: "GET", path: b("fields=name&status=REVIEWING&limit=2&offset=12"),
			status: 200, want: page(14, 50, 54)},
		{name: "status=REJECT", auth: "many", method: "GET", path: b("fields=name&status=REJECT&limit=1"),
			status: 200, want: page(13, 3)},
		{name: "fields=name,description returns id, name and description", auth: "many", method: "GET", path: b("fields=name,description&limit=1"),
			status: 200, want: `{"status":1,"result":{"scenarios":[{"id":"m-00","name":"Scenario 00","description":"d00"}],"total_count":55}}`},
		{name: "fields=status returns id and status", auth: "many", method: "GET", path: b("fields=status&limit=2&offset=1"),
			status: 200, want: `{"status":1,"result":{"scenarios":[{"id":"m-01","status":"ACTIVE"},{"id":"m-02","status":"REVIEWING"}],"total_count":55}}`},
		{name: "fields=id returns only id", auth: "many", method: "GET", path: b("fields=id&limit=1"),
			status: 200, want: `{"status":1,"result":{"scenarios":[{"id":"m-00"}],"total_count":55}}`},
		{name: "fields with spaces and a repeat", auth: "many", method: "GET", path: b("fields=name,%20description,name&limit=1"),
			status: 200, want: `{"status":1,"result":{"scenarios":[{"id":"m-00","name":"Scenario 00","description":"d00"}],"total_count":55}}`},
		{name: "a tenant sees only its own scenarios", auth: "other", method: "GET", path: b("fields=name"),
			status: 200, want: `{"status":1,"result":{"scenarios":[{"id":"sc-other","name":"Other's scenario"},{"id":"sc-remind","name":"Other's reminder"}],"total_count":2}}`},
		{name: "a tenant without scenarios gets an empty list", auth: "Bearer " + mustSign(jwt.MapClaims{"apiKey": "disabled-key"}, "disabled-secret"),
			method: "GET", path: b("fields=name"), status: 200, want: `{"status":1,"result":{"scenarios":[],"total_count":0}}`},

		// 7.2, row by row.
		{name: "7.2 401 Unauthorized", auth: "bad", method: "GET", path: pathB, status: 401, want: body401},
		{name: "7.2 1201 Application is not found", auth: "Bearer " + mustSign(jwt.MapClaims{"apiKey": "no-such-key"}, "x"), method: "GET", path: pathB, status: 401, want: body1201},
		{name: "7.2 400 status unknown", auth: "many", method: "GET", path: b("status=DONE"), status: 400, invalid: []string{"status"}},
		{name: "7.2 400 status lower case", auth: "many", method: "GET", path: b("status=active"), status: 400, invalid: []string{"status"}},
		{name: "7.2 400 limit 51 is over the maximum", auth: "many", method: "GET", path: b("limit=51"), status: 400, invalid: []string{"limit"}},
		{name: "7.2 400 limit 0", auth: "many", method: "GET", path: b("limit=0"), status: 400, invalid: []string{"limit"}},
		{name: "7.2 400 limit negative", auth: "many", method: "GET", path: b("limit=-1"), status: 400, invalid: []string{"limit"}},
		{name: "7.2 400 limit not an integer", auth: "many", method: "GET", path: b("limit=ten"), status: 400, invalid: []string{"limit"}},
		{name: "7.2 400 limit fractional", auth: "many", method: "GET", path: b("limit=1.5"), status: 400, invalid: []string{"limit"}},
		{name: "7.2 400 offset negative", auth: "many", method: "GET", path: b("offset=-1"), status: 400, invalid: []string{"offset"}},
		{name: "7.2 400 offset not an integer", auth: "many", method: "GET", path: b("offset=x"), status: 400, invalid: []string{"offset"}},
		{name: "7.2 400 fields names an unknown field", auth: "many", method: "GET", path: b("fields=name,secret"), status: 400, invalid: []string{"fields"}},
		{name: "7.2 400 names every bad parameter", auth: "many", method: "GET", path: b("status=x&limit=99&offset=-5&fields=nope"), status: 400,
			invalid: []string{"status", "limit", "offset", "fields"}},
	}
}()

// TestOperations runs the tables of operations A, B and C in both HTTP
// status modes (docs/design.md#http-status-of-error-bodies): "semantic" maps each code to its HTTP status,
// "always_200" answers every body with 200; the bodies are the same.
func TestOperations(t *testing.T) { eachBackend(t, testOperations) }

func testOperations(t *testing.T, backend string) {
	for _, mode := range []string{config.StatusModeSemantic, config.StatusModeAlways} {
		t.Run(mode, func(t *testing.T) {
			s := startServerOn(t, backend, testFixtures+manyScenarios(), "DIALBOX_API_ERROR_HTTP_STATUS="+mode)
			if got := s.m.Config.API.ErrorHTTPStatus; got != mode {
				t.Fatalf("error_http_status = %q, want %q", got, mode)
			}
			tokens := testTokens(t)
			seen := map[string]bool{}
			for _, table := range []struct {
				name  string
				cases []apiCase
			}{{"A", operationACases}, {"B", operationBCases}, {"C", operationCCases}} {
				t.Run(table.name, func(t *testing.T) {
					for _, c := range table.cases {
						t.Run(c.name, func(t *testing.T) { c.run(t, s, tokens, mode == config.StatusModeAlways, seen) })
					}
				})
			}
		})
	}
}

// TestAuthentication checks docs/design.md#authentication-checks-in-a-fixed-order for each operation: what is 401, what
// is 1201, and which tokens are good.
func TestAuthentication(t *testing.T) { eachBackend(t, testAuthentication) }

func testAuthentication(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures)
	s.exec(t, `UPDATE applications SET disabled = 1 WHERE api_key = 'disabled-key'`)
	now := time.Now()
	hs256 := func(claims jwt.MapClaims, secret string) string {
		return "Bearer " + sign(t, jwt.SigningMethodHS256, secret, claims)
	}
	good := sign(t, jwt.SigningMethodHS256, "qa-secret", jwt.MapClaims{"apiKey": "qa-key"})
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + parts[1] + "." + strings.Map(func(r rune) rune {
		if r == 'A' {
			return 'B'
		}
		return 'A'
	}, parts[2])

	cases := []struct {
		name   string
		header string
		status int
		want   string // "" for a success body
	}{
		{"header missing", "", 401, body401},
		{"not Bearer (Basic)", "Basic cWEta2V5OnFhLXNlY3JldA==", 401, body401},
		{"token without Bearer", good, 401, body401},
		{"Bearer without a token", "Bearer ", 401, body401},
		{"Bearer garbage", "Bearer garbage", 401, body401},
		{"Bearer with three garbage parts", "Bearer a.b.c", 401, body401},
		{"no apiKey claim", hs256(jwt.MapClaims{"sub": "qa-key"}, "qa-secret"), 401, body401},
		{"apiKey not a string", hs256(jwt.MapClaims{"apiKey": 42}, "qa-secret"), 401, body401},
		{"unknown application", hs256(jwt.MapClaims{"apiKey": "nobody"}, "qa-secret"), 401, body1201},
		{"unknown application, whatever the signature", "Bearer " + sign(t, jwt.SigningMethodNone, "", jwt.MapClaims{"apiKey": "nobody"}), 401, body1201},
		{"disabled application", hs256(jwt.MapClaims{"apiKey": "disabled-key"}, "disabled-secret"), 401, body1201},
		{"wrong secret", hs256(jwt.MapClaims{"apiKey": "qa-key"}, "other-secret"), 401, body401},
		{"another tenant's secret for this key", hs256(jwt.MapClaims{"apiKey": "qa-key"}, "poor-secret"), 401, body401},
		{"signature tampered", "Bearer " + tampered, 401, body401},
		{"alg none", "Bearer " + sign(t, jwt.SigningMethodNone, "", jwt.MapClaims{"apiKey": "qa-key"}), 401, body401},
		{"HS512 with the right secret", "Bearer " + sign(t, jwt.SigningMethodHS512, "qa-secret", jwt.MapClaims{"apiKey": "qa-key"}), 401, body401},
		{"HS384 with the right secret", "Bearer " + sign(t, jwt.SigningMethodHS384, "qa-secret", jwt.MapClaims{"apiKey": "qa-key"}), 401, body401},
		{"expired exp", hs256(jwt.MapClaims{"apiKey": "qa-key", "exp": now.Add(-time.Hour).Unix()}, "qa-secret"), 401, body401},
		{"good: HS256 {apiKey}", "Bearer " + good, 200, ""},
		{"good: with iat", hs256(jwt.MapClaims{"apiKey": "qa-key", "iat": now.Unix()}, "qa-secret"), 200, ""},
		{"good: exp in the future", hs256(jwt.MapClaims{"apiKey": "qa-key", "exp": now.Add(time.Hour).Unix()}, "qa-secret"), 200, ""},
		{"good: MintToken, as dialbox token prints it", "Bearer " + mintFor(t, s, "qa-key"), 200, ""},
	}
	ops := []struct{ name, method, path, body string }{
		{"A", "POST", opA("sc-dup"), `{"contacts":[{"phone_number":"0930000001"}]}`},
		{"B", "GET", pathB + "?fields=id&limit=1", ""},
		{"C", "POST", pathC, `{"campaign_id":"camp-dup","contacts":[{"phone_number":"0930000002"}]}`},
	}
	for _, op := range ops {
		for _, c := range cases {
			t.Run(op.name+"/"+c.name, func(t *testing.T) {
				status, body := s.do(t, op.method, op.path, c.header, op.body)
				if status != c.status {
					t.Errorf("HTTP status %d, want %d (body %s)", status, c.status, body)
				}
				if c.want != "" && string(body) != c.want {
					t.Errorf("body %s, want %s", body, c.want)
				}
				if c.want == "" && !bytes.HasPrefix(body, []byte(`{"status":1,"result":`)) {
					t.Errorf("body %s, want a success body", body)
				}
			})
		}
	}
}

// TestDefaultRegion: numbers without a country code are read in
// phone.default_region (docs/design.md#contacts), here set to GB by environment.
func TestDefaultRegion(t *testing.T) { eachBackend(t, testDefaultRegion) }

func testDefaultRegion(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures, "DIALBOX_PHONE_DEFAULT_REGION=GB")
	tokens := testTokens(t)
	seen := map[string]bool{}
	for _, c := range []apiCase{
		{name: "a GB national number is read as GB", path: opA("sc-dup"),
			body:   `{"contacts":[{"phone_number":"07400 123456"},{"phone_number":"+84 912 345 678"}]}`,
			status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","ho_ten":"","so_dien_thoai":"+447400123456"},{"contact_id":"<id>","ho_ten":"","so_dien_thoai":"+84912345678"}]}`},
		{name: "a VN national number is no longer valid", path: opA("sc-dup"),
			body: `{"contacts":[{"phone_number":"0912345678"}]}`, status: 422, want: body1403},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s, tokens, false, seen) })
	}
}

// TestScenarioObject checks operation B's full scenario object (docs/design.md#operation-bs-parameters):
// the fields in order, call_config as in docs/design.md#call-config, times in RFC 3339.
func TestScenarioObject(t *testing.T) { eachBackend(t, testScenarioObject) }

func testScenarioObject(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures)
	status, body := s.do(t, "GET", pathB+"?status=ACTIVE&limit=50", bearer(t, "qa-key", "qa-secret"), "")
	if status != 200 {
		t.Fatalf("HTTP %d %s", status, body)
	}
	var resp struct {
		Status int `json:"status"`
		Result struct {
			Scenarios  []json.RawMessage `json:"scenarios"`
			TotalCount int               `json:"total_count"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	// sc-remind, sc-dup, sc-empty, sc-nopool, sc-missingpool, sc-load are ACTIVE.
	if resp.Status != 1 || resp.Result.TotalCount != 6 || len(resp.Result.Scenarios) != 6 {
		t.Fatalf("body %s: want status 1 and 6 ACTIVE scenarios", body)
	}
	// An empty fields parameter is the default: all fields.
	status, all := s.do(t, "GET", pathB+"?status=ACTIVE&limit=50&fields=", bearer(t, "qa-key", "qa-secret"), "")
	if status != 200 || !bytes.Equal(all, body) {
		t.Errorf("fields= answered HTTP %d %s, want the same as no fields", status, all)
	}
	var remind json.RawMessage
	for _, raw := range resp.Result.Scenarios {
		if keys := objectKeys(t, raw); !slices.Equal(keys, scenarioFields) {
			t.Errorf("keys %v, want %v", keys, scenarioFields)
		}
		if bytes.Contains(raw, []byte(`"id":"sc-remind"`)) {
			remind = raw
		}
	}
	var sc struct {
		ID, Name, Description, Status string
		PersonalizedFields            []string        `json:"personalized_fields"`
		CallConfig                    json.RawMessage `json:"call_config"`
		CreatedAt                     string          `json:"created_at"`
		UpdatedAt                     string          `json:"updated_at"`
	}
	if err := json.Unmarshal(remind, &sc); err != nil {
		t.Fatalf("%s: %v", remind, err)
	}
	if sc.Name != "Payment reminder" || sc.Description != "Reminds customers of a due payment" || sc.Status != "ACTIVE" ||
		!slices.Equal(sc.PersonalizedFields, []string{"danh_xung", "ho_ten"}) {
		t.Errorf("sc-remind = %s", remind)
	}
	// The fixture sets pool, max_concurrent and re_call; the rest are defaults.
	wantConfig := `{"pool_hotline_key":"POOL_SYSTEM","call_routing":"ROUND_ROBIN","max_concurrent":10,"max_duration":300,` +
		`"allow_duplicate_phone":false,"re_call":{"times":2,"delay":300,"is_busy":true,"is_no_answer":true,"is_failed":false,"is_voice_mail":false},` +
		`"call_window":{"start":"08:00","end":"20:00","timezone":"Asia/Ho_Chi_Minh","days":["MON","TUE","WED","THU","FRI","SAT","SUN"]}}`
	if string(sc.CallConfig) != wantConfig {
		t.Errorf("call_config\n got %s\nwant %s", sc.CallConfig, wantConfig)
	}
	for _, ts := range []string{sc.CreatedAt, sc.UpdatedAt} {
		if _, err := time.Parse(time.RFC3339, ts); err != nil {
			t.Errorf("time %q: %v", ts, err)
		}
	}
}

// objectKeys lists a JSON object's keys in the order written.
func objectKeys(t testing.TB, raw json.RawMessage) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s is not an object", raw)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestListOrder: operation B lists newest first, ties by id. The second
// start adds scenarios later than the first start's, so they come first.
func TestListOrder(t *testing.T) {
	dir := t.TempDir()
	db, fx := filepath.Join(dir, "d.db"), filepath.Join(dir, "f.toml")
	tenant := "[[applications]]\napi_key = \"ord-key\"\napi_secret = \"ord-secret\"\n"
	sc := func(id string) string {
		return fmt.Sprintf("  [[applications.scenarios]]\n  id = %q\n  content = \"x\"\n", id)
	}
	if err := os.WriteFile(fx, []byte(tenant+sc("s-b")+sc("s-a")), 0o600); err != nil {
		t.Fatal(err)
	}
	first := startServerAt(t, db, fx)
	before := time.Now().UnixMilli()
	if err := first.m.Close(); err != nil {
		t.Fatal(err)
	}
	// created_at has millisecond resolution: make sure the clock moved on.
	testtool.WaitFor(t, "the clock to pass a millisecond", time.Second, func() bool { return time.Now().UnixMilli() > before })
	if err := os.WriteFile(fx, []byte(tenant+sc("s-b")+sc("s-a")+sc("s-d")+sc("s-c")), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServerAt(t, db, fx)
	status, body := s.do(t, "GET", pathB+"?fields=id", bearer(t, "ord-key", "ord-secret"), "")
	want := `{"status":1,"result":{"scenarios":[{"id":"s-c"},{"id":"s-d"},{"id":"s-a"},{"id":"s-b"}],"total_count":4}}`
	if status != 200 || string(body) != want {
		t.Errorf("HTTP %d %s\nwant %s", status, body, want)
	}
}

// TestTooManyContacts: 413 over limits.max_contacts_per_request or
// limits.max_body_bytes, with the defaults (10000, 16 MiB) and with the
// limits set by environment.
func TestTooManyContacts(t *testing.T) { eachBackend(t, testTooManyContacts) }

func testTooManyContacts(t *testing.T, backend string) {
	contacts := func(n int) string {
		return `{"contacts":[` + strings.TrimSuffix(strings.Repeat(`{"phone_number":"1"},`, n), ",") + `]}`
	}
	big := func(n int) string { // a body of at least n bytes
		return `{"contacts":[{"phone_number":"0912345678","note":"` + strings.Repeat("a", n) + `"}]}`
	}
	t.Run("defaults", func(t *testing.T) {
		s := startServerOn(t, backend, testFixtures)
		qa := bearer(t, "qa-key", "qa-secret")
		for _, c := range []struct {
			name, path, body string
			status           int
			want             string
		}{
			{"10001 contacts on A", opA("sc-remind"), contacts(10001), 413, body413},
			{"10001 contacts on C", pathC, `{"campaign_id":"camp-1",` + contacts(10001)[1:], 413, body413},
			{"10000 contacts is within the limit (all invalid here)", opA("sc-remind"), contacts(10000), 422, body1403},
			{"a body over 16 MiB on A", opA("sc-remind"), big(16 << 20), 413, body413},
			{"a body over 16 MiB on C", pathC, `{"campaign_id":"camp-1",` + big(16 << 20)[1:], 413, body413},
		} {
			t.Run(c.name, func(t *testing.T) {
				status, body := s.do(t, "POST", c.path, qa, c.body)
				if status != c.status || string(body) != c.want {
					t.Errorf("HTTP %d %s, want %d %s", status, body, c.status, c.want)
				}
			})
		}
	})
	t.Run("configured", func(t *testing.T) {
		s := startServerOn(t, backend, testFixtures, "DIALBOX_LIMITS_MAX_CONTACTS_PER_REQUEST=3", "DIALBOX_LIMITS_MAX_BODY_BYTES=1000")
		qa := bearer(t, "qa-key", "qa-secret")
		for _, c := range []struct {
			name, body string
			status     int
		}{
			{"4 contacts", contacts(4), 413},
			{"3 contacts", contacts(3), 422},
			{"1001 bytes", big(1001), 413},
			{"under 1000 bytes", big(900), 200},
		} {
			t.Run(c.name, func(t *testing.T) {
				status, body := s.do(t, "POST", opA("sc-dup"), qa, c.body)
				if status != c.status {
					t.Errorf("HTTP %d %s, want %d", status, body, c.status)
				}
				if status == 413 && string(body) != body413 {
					t.Errorf("body %s, want %s", body, body413)
				}
			})
		}
	})
}

// TestTenantIsolation: a token sees only its own tenant (docs/design.md#tenants-never-see-each-other). qa and
// other both have a scenario "sc-remind"; each gets its own.
func TestTenantIsolation(t *testing.T) { eachBackend(t, testTenantIsolation) }

func testTenantIsolation(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures)
	tokens := testTokens(t)
	seen := map[string]bool{}
	for _, c := range []apiCase{
		{name: "qa cannot add to other's scenario", path: opA("sc-other"),
			body: `{"contacts":[{"phone_number":"0940000001"}]}`, status: 404, want: body3001},
		{name: "qa cannot add to other's campaign", path: pathC,
			body: `{"campaign_id":"camp-other","contacts":[{"phone_number":"0940000001"}]}`, status: 404, want: body404Camp},
		{name: "other cannot add to qa's scenario", auth: "other", path: opA("sc-dup"),
			body: `{"contacts":[{"phone_number":"0940000001"}]}`, status: 404, want: body3001},
		{name: "other cannot add to qa's campaign", auth: "other", path: pathC,
			body: `{"campaign_id":"camp-1","contacts":[{"phone_number":"0940000001"}]}`, status: 404, want: body404Camp},
		{name: "qa's sc-remind is qa's", path: opA("sc-remind"),
			body:   `{"contacts":[{"phone_number":"0940000001"}]}`,
			status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"","so_dien_thoai":"+84940000001"}]}`},
		{name: "other's sc-remind is other's, and qa's queued phone is no duplicate there", auth: "other", path: opA("sc-remind"),
			body:   `{"contacts":[{"phone_number":"0940000001"}]}`,
			status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","ma_kh":"","so_dien_thoai":"+84940000001"}]}`},
		{name: "qa's list has none of other's", method: "GET", path: pathB + "?fields=id&limit=50",
			status: 200, want: `{"status":1,"result":{"scenarios":[{"id":"sc-draft"},{"id":"sc-dup"},{"id":"sc-empty"},{"id":"sc-load"},{"id":"sc-missingpool"},{"id":"sc-nopool"},{"id":"sc-remind"}],"total_count":7}}`},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, s, tokens, false, seen) })
	}
}

// TestInternalErrors produces 1402, 9999 and 500 for real by breaking the
// store underneath the running server: a trigger that makes every contact
// insert fail (1402), and a scenario row whose call_config is not JSON
// (the internal error of each operation, each spelled its own way).
func TestInternalErrors(t *testing.T) {
	for _, mode := range []string{config.StatusModeSemantic, config.StatusModeAlways} {
		t.Run(mode, func(t *testing.T) {
			s := startServer(t, testFixtures, "DIALBOX_API_ERROR_HTTP_STATUS="+mode)
			tokens := testTokens(t)
			seen := map[string]bool{}
			always := mode == config.StatusModeAlways
			s.exec(t, `CREATE TRIGGER break_import BEFORE INSERT ON contacts BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`)
			for _, c := range []apiCase{
				{name: "7.1 1402 Import contacts failed", path: opA("sc-remind"),
					body: `{"contacts":[{"phone_number":"0950000001"}]}`, status: 500, want: body1402},
				{name: "7.3 1402 Import contacts failed", path: pathC,
					body: `{"campaign_id":"camp-1","contacts":[{"phone_number":"0950000002"}]}`, status: 500, want: body1402},
			} {
				t.Run(c.name, func(t *testing.T) { c.run(t, s, tokens, always, seen) })
			}
			// The failed imports left nothing behind, and the store still works.
			s.exec(t, `DROP TRIGGER break_import`)
			var n int
			if err := sqliteAt(t, s.m.Config.Database).QueryRow(`SELECT count(*) FROM contacts`).Scan(&n); err != nil || n != 0 {
				t.Errorf("contacts after failed imports: %d (%v), want 0", n, err)
			}
			s.exec(t, `UPDATE scenarios SET call_config = 'not json' WHERE id = 'sc-remind'`)
			for _, c := range []apiCase{
				{name: "7.1 9999 Unknown error", path: opA("sc-remind"),
					body: `{"contacts":[{"phone_number":"0950000003"}]}`, status: 500, want: body9999A},
				{name: "7.2 9999 Uknown error", method: "GET", path: pathB, status: 500, want: body9999B},
				{name: "7.3 500 Lỗi hệ thống", path: pathC,
					body: `{"campaign_id":"camp-1","contacts":[{"phone_number":"0950000004"}]}`, status: 500, want: body500C},
				{name: "other scenarios still work", path: opA("sc-dup"),
					body: `{"contacts":[{"phone_number":"0950000005"}]}`, status: 200,
					want: `{"status":1,"result":[{"contact_id":"<id>","ho_ten":"","so_dien_thoai":"+84950000005"}]}`},
			} {
				t.Run(c.name, func(t *testing.T) { c.run(t, s, tokens, always, seen) })
			}
		})
	}
}

// TestHTTPStatusMapping covers the semantic mode's mapping for every code,
// including 429 (TestRateLimit produces it for real).
func TestHTTPStatusMapping(t *testing.T) {
	for code, want := range map[int]int{
		400: 400, 401: 401, 1201: 401, 1104: 402, 1105: 402, 3001: 404, 404: 404, 413: 413,
		1208: 422, 1403: 422, 429: 429, 2301: 503, 1402: 500, 500: 500, 9999: 500,
	} {
		if got := httpx.SemanticStatus(code); got != want {
			t.Errorf("httpStatusFor(%d) = %d, want %d", code, got, want)
		}
	}
}

// TestConcurrentImports: 32 clients add 50 contacts each at once; every
// contact_id is distinct, and every acknowledged one is in the store.
func TestConcurrentImports(t *testing.T) { eachBackend(t, testConcurrentImports) }

func testConcurrentImports(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures)
	qa := bearer(t, "qa-key", "qa-secret")
	const clients, perRequest = 32, 50
	var mu sync.Mutex
	acked := map[string]string{} // contact_id -> phone
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			b.WriteString(`{"contacts":[`)
			for i := 0; i < perRequest; i++ {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{"phone_number":"096%07d","ho_ten":"c%d-%d"}`, c*perRequest+i, c, i)
			}
			b.WriteString(`]}`)
			req, _ := http.NewRequest("POST", s.url+opA("sc-load"), strings.NewReader(b.String()))
			req.Header.Set("Authorization", qa)
			resp, err := httpClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var out struct {
				Status int
				Result []map[string]string
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.Status != 1 || len(out.Result) != perRequest {
				errs <- fmt.Errorf("client %d: HTTP %d, %d contacts, %v", c, resp.StatusCode, len(out.Result), err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range out.Result {
				if _, dup := acked[r["contact_id"]]; dup {
					errs <- fmt.Errorf("contact_id %s handed out twice", r["contact_id"])
				}
				acked[r["contact_id"]] = r["so_dien_thoai"]
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(acked) != clients*perRequest {
		t.Fatalf("%d distinct contact_ids acknowledged, want %d", len(acked), clients*perRequest)
	}
	stored := map[string]string{}
	if err := s.m.store.MetricsRows(context.Background(), `SELECT id, phone FROM contacts WHERE scenario_id = 'sc-load'`,
		func(scan func(...any) error) error {
			var id, phone string
			err := scan(&id, &phone)
			stored[id] = phone
			return err
		}); err != nil {
		t.Fatal(err)
	}
	if len(stored) != len(acked) {
		t.Errorf("%d contacts stored, %d acknowledged", len(stored), len(acked))
	}
	for id, phone := range acked {
		if stored[id] != phone {
			t.Errorf("contact %s: stored phone %q, acknowledged %q", id, stored[id], phone)
		}
	}
}

// TestConcurrentDuplicates: 32 requests add the same phone to a scenario
// that forbids duplicates at the same moment; exactly one adds it, the
// others find it queued (1403), and one row is stored.
func TestConcurrentDuplicates(t *testing.T) { eachBackend(t, testConcurrentDuplicates) }

func testConcurrentDuplicates(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures)
	qa := bearer(t, "qa-key", "qa-secret")
	const clients = 32
	statuses := make([]int, clients)
	bodies := make([][]byte, clients)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[c], bodies[c] = s.do(t, "POST", opA("sc-remind"), qa, `{"contacts":[{"phone_number":"0960000001"}]}`)
		}()
	}
	wg.Wait()
	added := 0
	for c := range statuses {
		switch {
		case statuses[c] == 200:
			added++
		case statuses[c] != 422 || string(bodies[c]) != body1403:
			t.Errorf("HTTP %d %s, want 200 or 1403", statuses[c], bodies[c])
		}
	}
	if added != 1 {
		t.Errorf("%d requests added the phone, want 1", added)
	}
	if n := queryInt(t, s.m.store, `SELECT count(*) FROM contacts WHERE phone = '+84960000001'`); n != 1 {
		t.Errorf("%d rows for the phone, want 1", n)
	}
}

// TestDisabledHotlines: a pool is available only while one of its numbers
// is enabled (2301, docs/design.md#order-of-checks-for-operations-a-and-c); hotlines are switched at run time.
func TestDisabledHotlines(t *testing.T) { eachBackend(t, testDisabledHotlines) }

func testDisabledHotlines(t *testing.T, backend string) {
	s := startServerOn(t, backend, testFixtures)
	tokens := testTokens(t)
	seen := map[string]bool{}
	pool := `(SELECT id FROM applications WHERE api_key = 'qa-key') AND pool_key = 'POOL_SYSTEM'`
	s.exec(t, `UPDATE hotlines SET enabled = 0 WHERE app_id = `+pool)
	apiCase{name: "every number disabled", path: opA("sc-remind"), body: `{"contacts":[{"phone_number":"0970000001"}]}`,
		status: 503, want: body2301}.run(t, s, tokens, false, seen)
	s.exec(t, `UPDATE hotlines SET enabled = 1 WHERE number = '02873000002' AND app_id = `+pool)
	apiCase{name: "one number enabled again", path: opA("sc-remind"), body: `{"contacts":[{"phone_number":"0970000001"}]}`,
		status: 200, want: `{"status":1,"result":[{"contact_id":"<id>","danh_xung":"","ho_ten":"","so_dien_thoai":"+84970000001"}]}`}.run(t, s, tokens, false, seen)
}

// TestNormalizePhonesInParallel: a large request's numbers, parsed on
// every core, come out as parsing them one by one does.
func TestNormalizePhonesInParallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	raws := []any{"0912345678", "+84 912 345 678", "12", "abc", 84912345678.0, nil, "0283 7300 001", "+1 650 253 0000"}
	items := make([]any, 1000)
	for i := range items {
		switch raw := raws[i%len(raws)]; {
		case i%97 == 0:
			items[i] = "not an object"
		case raw == nil:
			items[i] = map[string]any{"ho_ten": "x"}
		default:
			items[i] = map[string]any{"phone_number": raw}
		}
	}
	got := domain.NormalizePhones(items, "VN")
	for i, item := range items {
		var want domain.NormalizedPhone
		if obj, ok := item.(map[string]any); ok {
			if raw, ok := obj["phone_number"].(string); ok {
				want.E164, want.Err = domain.NormalizePhone(raw, "VN")
			}
		}
		if got[i] != want {
			t.Fatalf("item %d (%v): %+v, one by one %+v", i, item, got[i], want)
		}
	}
}
