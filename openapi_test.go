package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// contract checks real responses against openapi.yaml with kin-openapi,
// which validates OpenAPI 3.1 documents with JSON Schema 2020-12.
type contract struct {
	t    *testing.T
	url  string
	seen map[string]bool // "op code" pairs answered and valid
}

var contractRouter = sync.OnceValues(func() (routers.Router, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapiYAML)
	if err != nil {
		return nil, err
	}
	doc.Servers = nil // match any host: test servers listen on random ports
	return legacy.NewRouter(doc)
})

// checkContract fails t unless a response matches openapi.yaml: status
// documented for the operation, headers and body valid for it. It holds
// for servers in the default "semantic" error_http_status mode; any API
// test can call it on the responses it gets.
func checkContract(t testing.TB, method, url string, status int, header http.Header, body []byte) {
	t.Helper()
	if err := validateContract(method, url, status, header, body); err != nil {
		t.Errorf("%s %s answered %d %.300s\nwhich the contract refuses: %.1500v", method, url, status, body, err)
	}
}

func validateContract(method, url string, status int, header http.Header, body []byte) error {
	router, err := contractRouter()
	if err != nil {
		return err
	}
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return err
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return fmt.Errorf("no operation in the document: %w", err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(context.Background(), in)
}

func loadContract(t *testing.T) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapiYAML)
	if err != nil {
		t.Fatalf("openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	if !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi.yaml is OpenAPI %s, want 3.1", doc.OpenAPI)
	}
	return doc
}

func newContract(t *testing.T, url string, seen map[string]bool) *contract {
	loadContract(t) // fails with the document's own problems first
	return &contract{t: t, url: url, seen: seen}
}

// do sends a request and fails the test unless the response matches the
// document: status documented, headers and body valid for it.
func (c *contract) do(op, method, path, auth, body string) (int, string) {
	t := c.t
	t.Helper()
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	code := fmt.Sprint(resp.StatusCode)
	var api struct {
		Status int `json:"status"`
		Code   int `json:"code"`
	}
	if json.Unmarshal(got, &api) == nil && strings.HasPrefix(path, "/api/") {
		code = "1"
		if api.Status == 0 {
			code = fmt.Sprint(api.Code)
		}
	}
	if c.validate(method, path, resp.StatusCode, resp.Header, got) == nil {
		c.seen[op+" "+code] = true
	} else {
		checkContract(t, method, c.url+path, resp.StatusCode, resp.Header, got)
	}
	return resp.StatusCode, code
}

func (c *contract) validate(method, path string, status int, header http.Header, body []byte) error {
	return validateContract(method, c.url+path, status, header, body)
}

const (
	contractA = "/api/v1/public-api/scenarios/%s/calls"
	contractB = "/api/v1/public-api/scenarios"
	contractC = "/api/v1/public-api/campaign"
)

func contacts(phones ...string) string {
	var items []string
	for _, p := range phones {
		items = append(items, fmt.Sprintf(`{"phone_number":%q,"ho_ten":"Khách","tuoi":42}`, p))
	}
	return "[" + strings.Join(items, ",") + "]"
}

// TestOpenAPIContract drives every public operation to its success and to
// each error code it can answer, and checks every answer against
// openapi.yaml.
func TestOpenAPIContract(t *testing.T) {
	seen := map[string]bool{}
	s := startServer(t, testFixtures, "DIALBOX_LIMITS_MAX_CONTACTS_PER_REQUEST=3")
	c := newContract(t, s.url, seen)
	qa := bearer(t, "qa-key", "qa-secret")
	expired := bearer(t, "expired-key", "expired-secret")
	poor := bearer(t, "poor-key", "poor-secret")
	nobody := bearer(t, "nobody-key", "nobody-secret")
	a := func(sc string) string { return fmt.Sprintf(contractA, sc) }
	camp := func(id, contacts string) string { return fmt.Sprintf(`{"campaign_id":%q,"contacts":%s}`, id, contacts) }

	for _, r := range []struct{ op, method, path, auth, body string }{
		{"A", "POST", a("sc-remind"), qa, `{"contacts":` + contacts("0912000001", "bad", "0912000001") + `}`},
		{"A", "POST", a("sc-remind"), qa, `{"contacts":"no"}`},
		{"A", "POST", a("sc-remind"), "", `{"contacts":[]}`},
		{"A", "POST", a("sc-remind"), nobody, `{"contacts":[]}`},
		{"A", "POST", a("sc-exp"), expired, `{"contacts":` + contacts("0912000002") + `}`},
		{"A", "POST", a("sc-poor"), poor, `{"contacts":` + contacts("0912000003", "0912000004", "0912000005") + `}`},
		{"A", "POST", a("sc-none"), qa, `{"contacts":[]}`},
		{"A", "POST", a("sc-remind"), qa, `{"contacts":` + contacts("0912000006", "0912000007", "0912000008", "0912000009") + `}`},
		{"A", "POST", a("sc-empty"), qa, `{"contacts":` + contacts("0912000010") + `}`},
		{"A", "POST", a("sc-remind"), qa, `{"contacts":` + contacts("bad") + `}`},
		{"A", "POST", a("sc-nopool"), qa, `{"contacts":` + contacts("0912000011") + `}`},

		{"B", "GET", contractB, qa, ""},
		{"B", "GET", contractB + "?status=ACTIVE&fields=name,description&limit=2&offset=1", qa, ""},
		{"B", "GET", contractB + "?limit=51", qa, ""},
		{"B", "GET", contractB, "Bearer nope", ""},
		{"B", "GET", contractB, nobody, ""},

		{"C", "POST", contractC, qa, camp("camp-1", contacts("0912000020", "+84 912 000 021"))},
		{"C", "POST", contractC, qa, `{"contacts":[]}`},
		{"C", "POST", contractC, "", camp("camp-1", "[]")},
		{"C", "POST", contractC, nobody, camp("camp-1", "[]")},
		{"C", "POST", contractC, expired, camp("camp-exp", contacts("0912000022"))},
		{"C", "POST", contractC, poor, camp("camp-poor", contacts("0912000023", "0912000024", "0912000025"))},
		{"C", "POST", contractC, qa, camp("camp-none", contacts("0912000026"))},
		{"C", "POST", contractC, qa, camp("camp-1", contacts("0912000027", "0912000028", "0912000029", "0912000030"))},
		{"C", "POST", contractC, qa, camp("camp-empty", contacts("0912000031"))},
		{"C", "POST", contractC, qa, camp("camp-1", contacts("bad"))},
		{"C", "POST", contractC, qa, camp("camp-nopool", contacts("0912000032"))},

		{"ops", "GET", "/healthz", "", ""},
		{"ops", "GET", "/readyz", "", ""},
		{"ops", "GET", "/metrics", "", ""},
		{"ops", "GET", "/openapi.yaml", "", ""},
	} {
		c.do(r.op, r.method, r.path, r.auth, r.body)
	}

	// Storing fails: 1402 on A and C.
	s.exec(t, `CREATE TRIGGER contract_break BEFORE INSERT ON contacts BEGIN SELECT RAISE(ABORT, 'disk on fire'); END`)
	c.do("A", "POST", a("sc-remind"), qa, `{"contacts":`+contacts("0912000040")+`}`)
	c.do("C", "POST", contractC, qa, camp("camp-1", contacts("0912000041")))
	s.exec(t, `DROP TRIGGER contract_break`)
	// Reading the scenario fails: each operation's own internal error.
	s.exec(t, `UPDATE scenarios SET call_config = 'not json' WHERE id = 'sc-remind'`)
	c.do("A", "POST", a("sc-remind"), qa, `{"contacts":`+contacts("0912000042")+`}`)
	c.do("B", "GET", contractB, qa, "")
	c.do("C", "POST", contractC, qa, camp("camp-1", contacts("0912000043")))

	// 429: one request of burst, then a rate no test waits for.
	limited := startServer(t, testFixtures, "DIALBOX_LIMITS_RATE_PER_SECOND=0.0001", "DIALBOX_LIMITS_BURST=1")
	lc := newContract(t, limited.url, seen)
	lc.do("B", "GET", contractB, qa, "")
	lc.do("A", "POST", a("sc-remind"), qa, `{"contacts":`+contacts("0912000050")+`}`)
	lc.do("B", "GET", contractB, qa, "")
	lc.do("C", "POST", contractC, qa, camp("camp-1", contacts("0912000051")))
	// 503 from /readyz once the database is gone.
	limited.m.store.Close()
	if status, _ := lc.do("ops", "GET", "/readyz", "", ""); status != 503 {
		t.Errorf("readyz with the store closed: %d", status)
	}

	want := map[string][]string{
		"A":   {"1", "400", "401", "1201", "1104", "1105", "3001", "413", "1208", "1403", "2301", "1402", "9999", "429"},
		"B":   {"1", "400", "401", "1201", "9999", "429"},
		"C":   {"1", "400", "401", "1201", "1104", "1105", "404", "413", "1208", "1403", "2301", "1402", "500", "429"},
		"ops": {"200", "503"},
	}
	var missing []string
	for op, codes := range want {
		for _, code := range codes {
			if !seen[op+" "+code] {
				missing = append(missing, op+" "+code)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("answers not produced (or not valid): %v", missing)
	}
}

// TestOpenAPIContractIsStrict makes sure the document would catch drift
// (bodies a careless change could produce are refused) and accepts the
// answers TestOpenAPIContract cannot bring about on demand.
func TestOpenAPIContractIsStrict(t *testing.T) {
	c := newContract(t, "http://127.0.0.1:1", map[string]bool{})
	header := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {"abc"}}
	for _, r := range []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"B's 9999 spelled as A's", "GET", contractB, 500, `{"status":0,"code":9999,"message":"Unknown error"}`},
		{"A's 9999 spelled as B's", "POST", fmt.Sprintf(contractA, "x"), 500, `{"status":0,"code":9999,"message":"Uknown error"}`},
		{"C's 500 in English", "POST", contractC, 500, `{"status":0,"code":500,"message":"System error"}`},
		{"1105 under the wrong HTTP status", "POST", contractC, 422, `{"status":0,"code":1105,"message":"Portal wallet is out of money"}`},
		{"an undocumented status", "GET", contractB, 418, `{"status":0,"code":418,"message":"teapot"}`},
		{"success without contact_id", "POST", contractC, 200, `{"status":1,"result":[{"so_dien_thoai":"+84912345678"}]}`},
		{"phone not E.164", "POST", contractC, 200, `{"status":1,"result":[{"contact_id":"0193f4c2-7b8a-7c1e-9d2f-3a4b5c6d7e8f","so_dien_thoai":"0912345678"}]}`},
		{"total_count missing", "GET", contractB, 200, `{"status":1,"result":{"scenarios":[]}}`},
		{"unknown scenario field", "GET", contractB, 200, `{"status":1,"result":{"scenarios":[{"id":"x","secret":"y"}],"total_count":1}}`},
	} {
		if err := c.validate(r.method, r.path, r.status, header, []byte(r.body)); err == nil {
			t.Errorf("%s: accepted %d %s", r.name, r.status, r.body)
		}
	}
	// Answers the contract test cannot make happen on demand.
	overloaded, _ := json.Marshal(errorBody{Code: errOverloaded.Code, Message: errOverloaded.Message, Details: errOverloaded.Details})
	header429 := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {"abc"}, "Retry-After": {"1"}}
	for _, path := range []string{fmt.Sprintf(contractA, "x"), contractC} {
		if err := c.validate("POST", path, 429, header429, overloaded); err != nil {
			t.Errorf("too many imports in progress (%s): refused: %v", path, err)
		}
	}
	noID := http.Header{"Content-Type": {"application/json"}}
	if err := c.validate("GET", contractB, 200, noID, []byte(`{"status":1,"result":{"scenarios":[],"total_count":0}}`)); err == nil {
		t.Error("accepted a response without X-Request-Id")
	}
}

// TestOpenAPIServed checks GET /openapi.yaml serves the embedded document.
func TestOpenAPIServed(t *testing.T) {
	m, _ := startOpsServer(t, io.Discard)
	resp, body := opsDo(t, "GET", m.URL()+"/openapi.yaml", "", "")
	if resp.StatusCode != 200 || !bytes.Equal(body, openapiYAML) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/yaml") {
		t.Errorf("GET /openapi.yaml: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
}

// TestOpenAPIAdmin checks that every admin operation of the document is a
// route of the server (it answers 401 without the admin token, where an
// unknown route answers 404), and validates some real admin answers.
func TestOpenAPIAdmin(t *testing.T) {
	const adminToken = "contract-admin-token-0123456789"
	s := startServer(t, testFixtures, "DIALBOX_ADMIN_TOKEN="+adminToken)
	c := newContract(t, s.url, map[string]bool{})
	doc := loadContract(t)
	values := strings.NewReplacer("{app}", "qa-key", "{transition}", "submit", "{pool}", "POOL_SYSTEM",
		"{scenario}", "sc-remind", "{campaign}", "camp-1")
	operations := 0
	for path, item := range doc.Paths.Map() {
		if !strings.HasPrefix(path, "/admin/") {
			continue
		}
		for method := range item.Operations() {
			operations++
			p := values.Replace(path)
			for strings.Contains(p, "{") { // ids of things that need not exist
				i, j := strings.Index(p, "{"), strings.Index(p, "}")
				p = p[:i] + "x" + p[j+1:]
			}
			if status, _ := c.do("admin", method, p, "", `{}`); status != 401 {
				t.Errorf("%s %s without the admin token: %d, want 401 (is it a route?)", method, p, status)
			}
		}
	}
	if operations < 50 {
		t.Errorf("only %d admin operations in the document", operations)
	}

	auth := "Bearer " + adminToken
	for _, r := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/admin/v1/apps", 200},
		{"GET", "/admin/v1/apps/qa-key", 200},
		{"GET", "/admin/v1/apps/nope", 404},
		{"GET", "/admin/v1/apps/qa-key/wallet", 200},
		{"GET", "/admin/v1/apps/post-key/wallet", 200},
		{"POST", "/admin/v1/apps/qa-key/token", 200},
		{"GET", "/admin/v1/clock", 200},
		{"GET", "/admin/v1/apps/qa-key/pools/POOL_SYSTEM", 200},
		{"GET", "/admin/v1/apps/qa-key/scenarios/sc-remind", 200},
		{"GET", "/admin/v1/apps/qa-key/campaigns/camp-1", 200},
		{"GET", "/admin/v1/apps/qa-key/webhooks", 200},
		{"GET", "/admin/v1/apps/qa-key/contacts", 200},
	} {
		if status, _ := c.do("admin", r.method, r.path, auth, ""); status != r.status {
			t.Errorf("%s %s: %d, want %d", r.method, r.path, status, r.status)
		}
	}
}

// TestOpenAPIWebhookEvents lets the engine call the demo tenant's contacts
// and checks every event it queues for the webhook against the document's
// webhooks section.
func TestOpenAPIWebhookEvents(t *testing.T) {
	doc := loadContract(t)
	m, token := startOpsServer(t, io.Discard, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000",
		"DIALBOX_ENGINE_POLL_INTERVAL=10ms")
	var phones []string
	for i := 0; i < 12; i++ { // enough for several outcomes, retries and final results
		phones = append(phones, fmt.Sprintf("09120001%02d", i))
	}
	resp, body := opsDo(t, "POST", m.URL()+"/api/v1/public-api/scenarios/"+demoScenarioID+"/calls", token,
		`{"contacts":`+contacts(phones...)+`}`)
	if resp.StatusCode != 200 {
		t.Fatalf("operation A: %d %s", resp.StatusCode, body)
	}
	count := func() (done int) {
		m.store.read.QueryRow(`SELECT count(*) FROM webhook_messages WHERE event_type = 'contact.completed'`).Scan(&done)
		return done
	}
	deadline := time.Now().Add(time.Minute) // a bound for a stuck engine, not a pace
	for count() < len(phones) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d contacts completed", count(), len(phones))
		}
		time.Sleep(20 * time.Millisecond)
	}

	rows, err := m.store.read.Query(`SELECT event_type, payload FROM webhook_messages`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := map[string]int{}
	for rows.Next() {
		var typ, payload string
		if err := rows.Scan(&typ, &payload); err != nil {
			t.Fatal(err)
		}
		item := doc.Webhooks[typ]
		if item == nil || item.Post == nil {
			t.Fatalf("event %s is not in the document's webhooks", typ)
		}
		var v any
		if err := json.Unmarshal([]byte(payload), &v); err != nil {
			t.Fatal(err)
		}
		schema := item.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
			t.Errorf("%s payload refused by the contract: %.1500v\n%s", typ, err, payload)
		}
		seen[typ]++
	}
	t.Logf("events checked: %v", seen)
	if seen["call.completed"] < len(phones) || seen["contact.completed"] != len(phones) {
		t.Errorf("events checked: %v", seen)
	}
}
