package main

import (
	"bytes"
	"context"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/sandbox"
	"dialbox/internal/store"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
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
	// Recordings are answered as WAV files: checked as opaque bytes.
	openapi3filter.RegisterBodyDecoder("audio/wav", openapi3filter.FileBodyDecoder)
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
	resp, got, err := request(method, c.url+path, auth, body)
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
	if c.Validate(method, path, resp.StatusCode, resp.Header, got) == nil {
		c.seen[op+" "+code] = true
	} else {
		checkContract(t, method, c.url+path, resp.StatusCode, resp.Header, got)
	}
	return resp.StatusCode, code
}

func (c *contract) Validate(method, path string, status int, header http.Header, body []byte) error {
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
	// 404 from /metrics when metrics.listen serves them elsewhere.
	apart := startServer(t, testFixtures, "DIALBOX_METRICS_LISTEN=127.0.0.1:0")
	if status, _ := newContract(t, apart.url, seen).do("ops", "GET", "/metrics", "", ""); status != 404 {
		t.Errorf("metrics with metrics.listen set: %d, want 404", status)
	}
	// 503 from /readyz once the database is gone.
	limited.m.store.Close()
	if status, _ := lc.do("ops", "GET", "/readyz", "", ""); status != 503 {
		t.Errorf("readyz with the store closed: %d", status)
	}

	want := map[string][]string{
		"A":   {"1", "400", "401", "1201", "1104", "1105", "3001", "413", "1208", "1403", "2301", "1402", "9999", "429"},
		"B":   {"1", "400", "401", "1201", "9999", "429"},
		"C":   {"1", "400", "401", "1201", "1104", "1105", "404", "413", "1208", "1403", "2301", "1402", "500", "429"},
		"ops": {"200", "404", "503"},
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
// (bodies a careless change could produce, such as an admin answer that
// leaks a secret, are refused) and accepts the answers TestOpenAPIContract
// cannot bring about on demand.
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
		if err := c.Validate(r.method, r.path, r.status, header, []byte(r.body)); err == nil {
			t.Errorf("%s: accepted %d %s", r.name, r.status, r.body)
		}
	}
	// Answers the contract test cannot make happen on demand.
	overloaded, _ := json.Marshal(httpx.ErrorBody{Code: httpx.ErrOverloaded.Code, Message: httpx.ErrOverloaded.Message, Details: httpx.ErrOverloaded.Details})
	header429 := http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Request-Id": {"abc"}, "Retry-After": {"1"}}
	for _, path := range []string{fmt.Sprintf(contractA, "x"), contractC} {
		if err := c.Validate("POST", path, 429, header429, overloaded); err != nil {
			t.Errorf("too many imports in progress (%s): refused: %v", path, err)
		}
	}
	// The admin API: a leaked secret or any unknown property is refused.
	app := `{"id":1,"name":"QA","api_key":"qa-key","disabled":false,"is_demo":false,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z","destinations":{"allow":[],"deny":[]}`
	hook := `{"id":"h","url":"https://example.com/h","events":[],"enabled":true,"created_at":"2026-01-01T00:00:00Z","updated_at":"2026-01-01T00:00:00Z"`
	for _, r := range []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"api_secret in the application list", "GET", "/admin/v1/apps", 200, `{"status":1,"result":{"applications":[` + app + `,"api_secret":"s"}]}}`},
		{"api_secret on one application", "GET", "/admin/v1/apps/qa-key", 200, `{"status":1,"result":` + app + `,"api_secret":"s"}}`},
		{"api_secret after disabling", "POST", "/admin/v1/apps/qa-key/disable", 200, `{"status":1,"result":` + app + `,"api_secret":"s"}}`},
		{"an unknown application property", "GET", "/admin/v1/apps/qa-key", 200, `{"status":1,"result":` + app + `,"owner":"x"}}`},
		{"a destination prefix without its +", "GET", "/admin/v1/apps/qa-key", 200,
			`{"status":1,"result":` + strings.Replace(app, `"allow":[]`, `"allow":["65"]`, 1) + `}}`},
		{"an unknown envelope property", "GET", "/admin/v1/apps/qa-key", 200, `{"status":1,"result":` + app + `},"debug":true}`},
		{"the created application without its token", "POST", "/admin/v1/apps", 200, `{"status":1,"result":` + app + `,"api_secret":"s"}}`},
		{"the secret in the webhook list", "GET", "/admin/v1/apps/qa-key/webhooks", 200, `{"status":1,"result":{"webhooks":[` + hook + `,"secret":"whsec_x"}]}}`},
		{"the secret on an updated webhook", "PATCH", "/admin/v1/apps/qa-key/webhooks/h", 200, `{"status":1,"result":` + hook + `,"secret":"whsec_x"}}`},
		{"a rotated webhook without its secret", "POST", "/admin/v1/apps/qa-key/webhooks/h/rotate-secret", 200, `{"status":1,"result":` + hook + `}}`},
		{"a bare result", "GET", "/admin/v1/apps/qa-key/contacts", 200, `{"status":1,"result":{}}`},
		{"a status the route does not answer", "GET", "/admin/v1/clock", 404, `{"status":0,"code":404,"message":"Not found"}`},
		{"an admin 404 with another code", "GET", "/admin/v1/apps/x", 404, `{"status":0,"code":400,"message":"Application is not found"}`},
		{"an admin 400 without details", "PUT", "/admin/v1/clock", 400, `{"status":0,"code":400,"message":"Validation Failed"}`},
	} {
		if err := c.Validate(r.method, r.path, r.status, header, []byte(r.body)); err == nil {
			t.Errorf("%s: accepted %d %s", r.name, r.status, r.body)
		}
	}
	// The same bodies without the fault pass: what is refused above is the fault.
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/admin/v1/apps", `{"status":1,"result":{"applications":[` + app + `}]}}`},
		{"GET", "/admin/v1/apps/qa-key", `{"status":1,"result":` + app + `}}`},
		{"POST", "/admin/v1/apps", `{"status":1,"result":` + app + `,"api_secret":"s","access_token":"t"}}`},
		{"GET", "/admin/v1/apps/qa-key/webhooks", `{"status":1,"result":{"webhooks":[` + hook + `}]}}`},
		{"POST", "/admin/v1/apps/qa-key/webhooks/h/rotate-secret", `{"status":1,"result":` + hook + `,"secret":"whsec_x"}}`},
	} {
		if err := c.Validate(r.method, r.path, 200, header, []byte(r.body)); err != nil {
			t.Errorf("%s %s: refused %s: %v", r.method, r.path, r.body, err)
		}
	}
	noID := http.Header{"Content-Type": {"application/json"}}
	if err := c.Validate("GET", contractB, 200, noID, []byte(`{"status":1,"result":{"scenarios":[],"total_count":0}}`)); err == nil {
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

// adminContract drives the admin API and the sink, checks every answer
// against openapi.yaml, and records which statuses each operation answered.
type adminContract struct {
	t    *testing.T
	url  string
	auth string
	seen map[string]bool // "operationId status", answered and valid
}

// send makes one request and validates the answer; it returns the status
// and the body.
func (c *adminContract) send(method, path, auth, body string) (int, []byte) {
	t := c.t
	t.Helper()
	resp, got, err := request(method, c.url+path, auth, body)
	if err != nil {
		t.Fatal(err)
	}
	router, err := contractRouter()
	if err != nil {
		t.Fatal(err)
	}
	route, _, err := router.FindRoute(resp.Request)
	if err != nil {
		t.Fatalf("%s %s: no operation in the document: %v", method, path, err)
	}
	if validateContract(method, c.url+path, resp.StatusCode, resp.Header, got) == nil {
		c.seen[fmt.Sprintf("%s %d", route.Operation.OperationID, resp.StatusCode)] = true
	} else {
		checkContract(t, method, c.url+path, resp.StatusCode, resp.Header, got)
	}
	return resp.StatusCode, got
}

// do sends a request with the admin token and fails the test unless it gets
// the status wanted; it returns the answer's result.
func (c *adminContract) do(method, path, body string, want int) json.RawMessage {
	c.t.Helper()
	status, got := c.send(method, path, c.auth, body)
	if status != want {
		c.t.Errorf("%s %s %s: %d %.500s, want %d", method, path, body, status, got, want)
	}
	var answer struct{ Result json.RawMessage }
	json.Unmarshal(got, &answer)
	return answer.Result
}

// adminPath fills an admin path template with things that exist in
// testFixtures (or "x" for ids that need not exist).
func adminPath(template, app string) string {
	p := strings.NewReplacer("{app}", app, "{transition}", "submit", "{pool}", "POOL_SYSTEM", "{number}", "02873000001",
		"{scenario}", "sc-remind", "{campaign}", "camp-1").Replace(template)
	for strings.Contains(p, "{") {
		i, j := strings.Index(p, "{"), strings.Index(p, "}")
		p = p[:i] + "x" + p[j+1:]
	}
	return p
}

// adminOperations are the document's admin and sink operations, by method
// and path template.
func adminOperations(t *testing.T) map[[2]string]*openapi3.Operation {
	ops := map[[2]string]*openapi3.Operation{}
	for path, item := range loadContract(t).Paths.Map() {
		if strings.HasPrefix(path, "/admin/") || strings.HasPrefix(path, "/sink/") {
			for method, op := range item.Operations() {
				ops[[2]string{method, path}] = op
			}
		}
	}
	return ops
}

// TestOpenAPIAdmin drives every admin operation (and the sink) to its
// success and to each error status the document declares for it, with the
// engine calling and webhooks delivering so lists hold real calls, attempts
// and received messages, and checks every answer against openapi.yaml.
// Every status the document declares must have been answered: the document
// lists no status the server does not give.
func TestOpenAPIAdmin(t *testing.T) {
	const adminToken = "contract-admin-token-0123456789"
	s := startServer(t, testFixtures, append([]string{"DIALBOX_ADMIN_TOKEN=" + adminToken, "DIALBOX_ENGINE_ENABLED=true",
		"DIALBOX_SIMULATOR_TIME_SCALE=1000", "DIALBOX_ENGINE_POLL_INTERVAL=10ms"}, manyWrongTokens...)...)
	c := &adminContract{t: t, url: s.url, auth: "Bearer " + adminToken, seen: map[string]bool{}}
	ops := adminOperations(t)
	if len(ops) < 55 {
		t.Errorf("only %d admin operations in the document", len(ops))
	}

	// Every admin operation is a route (an unknown route answers 404) that
	// wants the admin token; each with an {app} knows no application "nope".
	for key := range ops {
		method, path := key[0], key[1]
		if !strings.HasPrefix(path, "/admin/") {
			continue
		}
		for _, auth := range []string{"", "Bearer wrong-token", bearer(t, "qa-key", "qa-secret")} {
			if status, _ := c.send(method, adminPath(path, "qa-key"), auth, `{}`); status != 401 {
				t.Errorf("%s %s with token %q: %d, want 401", method, path, auth, status)
			}
		}
		if strings.Contains(path, "{app}") {
			c.do(method, adminPath(path, "nope"), `{}`, 404)
		}
	}

	// On a server with the default limit of wrong tokens, once an address
	// sent too many, every operation answers 429, whatever the token.
	// The longest back-off, so every request falls within it.
	limited := startServer(t, testFixtures, "DIALBOX_ADMIN_TOKEN="+adminToken, "DIALBOX_ADMIN_WRONG_TOKEN_BACKOFF=1m")
	lc := &adminContract{t: t, url: limited.url, auth: "Bearer wrong-token", seen: c.seen}
	for range config.DefaultConfig().Admin.WrongTokensPerAddress {
		lc.send("GET", "/admin/v1/apps", "Bearer wrong-token", "")
	}
	for key := range ops {
		if strings.HasPrefix(key[1], "/admin/") {
			lc.do(key[0], adminPath(key[1], "qa-key"), `{}`, 429)
		}
	}

	const apps, qa = "/admin/v1/apps", "/admin/v1/apps/qa-key"
	// Clock and applications.
	c.do("GET", "/admin/v1/clock", "", 200)
	c.do("PUT", "/admin/v1/clock", `{"time_scale":1000}`, 200)
	c.do("PUT", "/admin/v1/clock", `{"time_scale":0}`, 400)
	c.do("GET", apps, "", 200)
	var created struct {
		APIKey string `json:"api_key"`
	}
	json.Unmarshal(c.do("POST", apps, `{"name":"Console"}`, 200), &created)
	c.do("POST", apps, `{"api_key":"qa-key"}`, 409)
	c.do("POST", apps, `{"disabled":true}`, 400)
	c.do("GET", qa, "", 200)
	app := apps + "/" + created.APIKey
	c.do("PATCH", app, `{"name":"Renamed","api_secret":"new-secret-012345"}`, 200)
	c.do("PATCH", app, `{"api_key":"other"}`, 400)
	c.do("POST", app+"/disable", "", 200)
	c.do("POST", app+"/enable", "", 200)
	c.do("POST", qa+"/token", "", 200)
	c.do("DELETE", app, "", 200)
	c.do("GET", app, "", 404)

	// Wallets.
	c.do("GET", qa+"/wallet", "", 200)
	c.do("GET", "/admin/v1/apps/post-key/wallet", "", 200) // postpaid, expires_at null
	c.do("PATCH", qa+"/wallet", `{"balance":2000000,"expires_at":null}`, 200)
	c.do("PATCH", qa+"/wallet", `{"balance":-1}`, 400)
	c.do("POST", qa+"/wallet/topup", `{"amount":1000}`, 200)
	c.do("POST", qa+"/wallet/topup", `{}`, 400)

	// Hotline pools.
	c.do("GET", qa+"/pools", "", 200)
	c.do("POST", qa+"/pools", `{"key":"POOL_NEW","numbers":["02873000009"]}`, 200)
	c.do("POST", qa+"/pools", `{"key":"POOL_SYSTEM"}`, 409)
	c.do("POST", qa+"/pools", `{}`, 400)
	c.do("GET", qa+"/pools/POOL_EMPTY", "", 200)
	c.do("GET", qa+"/pools/POOL_NONE", "", 404)
	c.do("POST", qa+"/pools/POOL_NEW/numbers", `{"numbers":["02873000010"]}`, 200)
	c.do("POST", qa+"/pools/POOL_NEW/numbers", `{"numbers":[]}`, 400)
	c.do("POST", qa+"/pools/POOL_NEW/numbers/02873000010/disable", "", 200)
	c.do("POST", qa+"/pools/POOL_NEW/numbers/02873000010/enable", "", 200)
	c.do("DELETE", qa+"/pools/POOL_NEW/numbers/02873000010", "", 200)
	c.do("DELETE", qa+"/pools/POOL_NEW/numbers/02873000010", "", 404)
	c.do("DELETE", qa+"/pools/POOL_NEW", "", 200)

	// Scenarios through every transition.
	c.do("GET", qa+"/scenarios", "", 200)
	c.do("GET", qa+"/scenarios?limit=0", "", 400)
	c.do("POST", qa+"/scenarios", `{"id":"sc-new","name":"New","content":"Xin chào"}`, 200)
	c.do("POST", qa+"/scenarios", `{"id":"sc-new"}`, 409)
	c.do("POST", qa+"/scenarios", `{"status":"LIVE"}`, 400)
	c.do("GET", qa+"/scenarios/sc-new", "", 200)
	c.do("PATCH", qa+"/scenarios/sc-new", `{"description":"d","call_config":{"re_call":{"times":1}}}`, 200)
	c.do("PATCH", qa+"/scenarios/sc-new", `{"status":"ACTIVE"}`, 400)
	for _, step := range []struct {
		transition string
		status     int
	}{{"submit", 200}, {"reject", 200}, {"edit", 200}, {"submit", 200}, {"approve", 200}, {"approve", 409}} {
		c.do("POST", qa+"/scenarios/sc-new/"+step.transition, "", step.status)
	}
	c.do("DELETE", qa+"/scenarios/sc-new", "", 200)
	c.do("GET", qa+"/scenarios/sc-new", "", 404)
	// Calls may start at any hour of any day (days null: every day), and
	// are recorded.
	c.do("PATCH", qa+"/scenarios/sc-remind", `{"call_config":{"record":true,"call_window":{"start":"00:00","end":"24:00","days":null}}}`, 200)

	// Campaigns.
	c.do("GET", qa+"/campaigns", "", 200)
	c.do("POST", qa+"/campaigns", `{"id":"camp-new","scenario_id":"sc-remind"}`, 200)
	c.do("POST", qa+"/campaigns", `{"id":"camp-new","scenario_id":"sc-remind"}`, 409)
	c.do("POST", qa+"/campaigns", `{}`, 400)
	c.do("GET", qa+"/campaigns/camp-new", "", 200)
	c.do("POST", qa+"/campaigns/camp-new/pause", "", 200)
	c.do("POST", qa+"/campaigns/camp-new/resume", "", 200)
	c.do("POST", qa+"/campaigns/camp-new/stop", "", 200)
	c.do("GET", qa+"/campaigns/camp-none", "", 404)

	// Webhook endpoints; one delivers to the sink.
	c.do("GET", qa+"/webhooks", "", 200)
	var hook struct{ ID string }
	json.Unmarshal(c.do("POST", qa+"/webhooks", `{"url":"`+s.url+`/sink/contract"}`, 200), &hook)
	c.do("POST", qa+"/webhooks", `{"url":"ftp://example.com/hook"}`, 400)
	var spare struct{ ID string }
	json.Unmarshal(c.do("POST", qa+"/webhooks", `{"url":"https://example.com/hook","events":["contact.completed"]}`, 200), &spare)
	c.do("GET", qa+"/webhooks/"+spare.ID, "", 200)
	c.do("PATCH", qa+"/webhooks/"+spare.ID, `{"enabled":false,"secret":"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}`, 200)
	c.do("PATCH", qa+"/webhooks/"+spare.ID, `{"url":"nope"}`, 400)
	c.do("POST", qa+"/webhooks/"+spare.ID+"/rotate-secret", "", 200)
	c.do("POST", qa+"/webhooks/"+spare.ID+"/recover", `{"since":"2020-01-01T00:00:00Z"}`, 200)
	c.do("POST", qa+"/webhooks/"+spare.ID+"/recover", `{}`, 400)
	c.do("DELETE", qa+"/webhooks/"+spare.ID, "", 200)
	c.do("GET", qa+"/webhooks/"+spare.ID, "", 404)

	// Do-not-call lists: the national register and a tenant's.
	for _, base := range []string{"/admin/v1/dnc", qa + "/dnc"} {
		c.do("GET", base, "", 200)
		c.do("POST", base+"/numbers", `{"numbers":["0912999001","+84912999002"]}`, 200)
		c.do("POST", base+"/numbers", `{"numbers":["0912999003","12"]}`, 400)
		c.do("PUT", base+"/numbers", "phone_number,name\n0912999004,A\n0912999004,B\nnope,C\n", 200)
		c.do("PUT", base+"/numbers", "name,city\nA,B\n", 400)
		c.do("GET", base, "", 200)
		c.do("GET", base+"/numbers/0912999004", "", 200)
		c.do("GET", base+"/numbers/12", "", 400)
		c.do("DELETE", base+"/numbers/0912999004", "", 200)
		c.do("DELETE", base+"/numbers/0912999004", "", 404)
		c.do("DELETE", base+"/numbers/12", "", 400)
	}

	// Fault rules, two of which shape the calls below.
	c.do("GET", "/admin/v1/faults", "", 200)
	c.do("POST", "/admin/v1/faults", `{"kind":"dial","phone":"0912000001","outcome":"ANSWERED"}`, 200)
	c.do("POST", "/admin/v1/faults", `{"kind":"dial","phone":"0912000002","outcome":"BUSY","times":1,"api_key":"qa-key"}`, 200)
	var rule struct{ ID string }
	json.Unmarshal(c.do("POST", "/admin/v1/faults", `{"kind":"latency","operation":"B","delay_ms":1,"probability":0.5}`, 200), &rule)
	c.do("POST", "/admin/v1/faults", `{"kind":"dial","outcome":"LOUD"}`, 400)
	c.do("GET", "/admin/v1/faults", "", 200)
	c.do("DELETE", "/admin/v1/faults/"+rule.ID, "", 200)
	c.do("DELETE", "/admin/v1/faults/"+rule.ID, "", 404)

	// Contacts (one invalid, one of a campaign) that the engine calls and
	// whose results go to both endpoints.
	qaToken := strings.TrimPrefix(bearer(t, "qa-key", "qa-secret"), "Bearer ")
	for _, r := range [][2]string{
		{fmt.Sprintf(contractA, "sc-remind"), `{"contacts":` + contacts("0912000001", "0912000002", "0912000003", "bad") + `}`},
		{contractC, `{"campaign_id":"camp-1","contacts":` + contacts("0912000004") + `}`},
	} {
		if resp, body := opsDo(t, "POST", s.url+r[0], qaToken, r[1]); resp.StatusCode != 200 {
			t.Fatalf("POST %s: %d %s", r[0], resp.StatusCode, body)
		}
	}
	count := func(query string) (n int) {
		sqliteAt(t, s.m.Config.Database).QueryRow(query).Scan(&n)
		return n
	}
	received := func() int {
		var sink struct{ Count int }
		json.Unmarshal(c.do("GET", "/admin/v1/sink", "", 200), &sink)
		return sink.Count
	}
	waitFor(t, "every contact called and a webhook delivered", func() bool {
		return count(`SELECT count(*) FROM contacts WHERE state = 'done'`) >= 4 &&
			count(`SELECT count(*) FROM webhook_attempts`) > 0 && received() > 0
	})

	var contactList struct {
		Contacts []struct{ ID string }
	}
	json.Unmarshal(c.do("GET", qa+"/contacts?limit=10", "", 200), &contactList)
	recordings := 0
	for _, k := range contactList.Contacts {
		var contact struct {
			Calls []struct {
				ID           string `json:"id"`
				RecordingURL string `json:"recording_url"`
			} `json:"calls"`
		}
		json.Unmarshal(c.do("GET", qa+"/contacts/"+k.ID, "", 200), &contact)
		for _, call := range contact.Calls {
			path := qa + "/contacts/" + k.ID + "/calls/" + call.ID + "/recording"
			if call.RecordingURL == "" {
				c.do("GET", path, "", 404) // not answered: no recording
				continue
			}
			if call.RecordingURL != s.url+path {
				t.Errorf("recording_url %s, want %s", call.RecordingURL, s.url+path)
			}
			if status, wav := c.send("GET", path, c.auth, ""); status != 200 || !bytes.HasPrefix(wav, []byte("RIFF")) {
				t.Errorf("GET %s: %d %.40q", path, status, wav)
			}
			recordings++
		}
	}
	if recordings == 0 {
		t.Error("no call was recorded")
	}
	c.do("GET", qa+"/contacts?state=ringing", "", 400)
	for _, results := range []string{qa + "/scenarios/sc-remind/results.csv", qa + "/campaigns/camp-1/results.csv"} {
		c.do("GET", results+"?state=done", "", 200)
		c.do("GET", results+"?outcome=MAYBE&from=monday", "", 400)
	}
	c.do("GET", qa+"/scenarios/sc-none/results.csv", "", 404)
	c.do("GET", qa+"/campaigns/camp-none/results.csv", "", 404)

	// Advertising: the settings, and a contact of an advertising scenario
	// that may call only the day after tomorrow, so it waits whatever the hour.
	c.do("GET", qa+"/advertising", "", 200)
	c.do("PATCH", qa+"/advertising", `{"start":"09:00","end":"16:00","timezone":"Asia/Ho_Chi_Minh"}`, 200)
	c.do("PATCH", qa+"/advertising", `{"max_calls_per_number_per_day":2}`, 400)
	hcm, _ := time.LoadLocation("Asia/Ho_Chi_Minh")
	day := strings.ToUpper(time.Now().In(hcm).AddDate(0, 0, 2).Weekday().String()[:3])
	c.do("POST", qa+"/scenarios", `{"id":"sc-ad","content":"Ưu đãi","call_config":{"purpose":"advertising","call_window":{"days":["`+day+`"]}}}`, 200)
	c.do("POST", qa+"/scenarios", `{"id":"sc-bad","call_config":{"purpose":"spam"}}`, 400)
	c.do("POST", qa+"/scenarios/sc-ad/submit", "", 200)
	c.do("POST", qa+"/scenarios/sc-ad/approve", "", 200)
	if resp, body := opsDo(t, "POST", s.url+fmt.Sprintf(contractA, "sc-ad"), qaToken, `{"contacts":`+contacts("0912000005")+`}`); resp.StatusCode != 200 {
		t.Fatalf("POST to sc-ad: %d %s", resp.StatusCode, body)
	}
	var adContacts struct {
		Contacts []struct{ ID string }
	}
	json.Unmarshal(c.do("GET", qa+"/contacts?scenario_id=sc-ad", "", 200), &adContacts)
	if len(adContacts.Contacts) != 1 {
		t.Fatalf("sc-ad contacts: %+v", adContacts)
	}
	var waiting struct{ Waiting *domain.Wait }
	json.Unmarshal(c.do("GET", qa+"/contacts/"+adContacts.Contacts[0].ID, "", 200), &waiting)
	if w := waiting.Waiting; w == nil || w.Reason != domain.ReasonAdvertisingHours || w.Until == nil || w.Until.In(hcm).Hour() != 9 {
		t.Errorf("the advertising contact's waiting: %+v, want advertising_hours until 09:00 in two days", w)
	}
	c.do("GET", qa+"/contacts/nope", "", 404)
	var importList struct {
		Imports []struct{ ID string }
	}
	json.Unmarshal(c.do("GET", qa+"/imports", "", 200), &importList)
	for _, im := range importList.Imports {
		c.do("GET", qa+"/imports/"+im.ID, "", 200)
	}
	c.do("GET", qa+"/imports?limit=501", "", 400)
	c.do("GET", qa+"/imports/nope", "", 404)
	var messageList struct {
		Messages []struct{ ID string }
	}
	json.Unmarshal(c.do("GET", qa+"/webhook-messages?limit=500", "", 200), &messageList)
	for _, m := range messageList.Messages {
		c.do("GET", qa+"/webhook-messages/"+m.ID, "", 200)
	}
	if len(messageList.Messages) > 0 {
		c.do("POST", qa+"/webhook-messages/"+messageList.Messages[0].ID+"/redeliver", "", 200)
	}
	c.do("GET", qa+"/webhook-messages?state=lost", "", 400)
	c.do("GET", qa+"/webhook-messages/nope", "", 404)
	c.do("POST", qa+"/webhooks/"+hook.ID+"/recover", `{"since":"2020-01-01T00:00:00Z"}`, 200)

	// The journal and the sink.
	c.do("GET", "/admin/v1/journal", "", 200)
	c.do("GET", "/admin/v1/journal?limit=0", "", 400)
	c.do("GET", "/admin/v1/journal/count?operation=A", "", 200)
	c.do("GET", "/admin/v1/journal/count?status=1", "", 400)
	c.do("DELETE", "/admin/v1/journal", "", 200)
	c.do("GET", "/admin/v1/sink?name=contract", "", 200)
	c.do("GET", "/admin/v1/sink?verified=maybe", "", 400)
	if status, _ := c.send("POST", "/sink/contract", "", `{"type":"call.completed"}`); status != 204 {
		t.Errorf("POST /sink/contract: %d, want 204", status)
	}
	if status, _ := c.send("POST", "/sink/contract", "", strings.Repeat(" ", s.m.Config.Sink.MaxBodyBytes+1)); status != 413 {
		t.Errorf("POST /sink/contract over sink.max_body_bytes: %d, want 413", status)
	}
	if status, _ := c.send("POST", "/sink/"+strings.Repeat("n", sandbox.MaxSinkNameBytes+1), "", `{}`); status != 400 {
		t.Errorf("POST /sink/ with a long name: %d, want 400", status)
	}
	c.do("DELETE", "/admin/v1/sink", "", 200)
	c.do("DELETE", "/admin/v1/faults", "", 200)

	// Reset: refused while the fixtures file does not load, then done.
	fixtures := s.m.Config.Fixtures
	if err := os.WriteFile(fixtures, []byte("[[applications]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.do("POST", "/admin/v1/reset", "", 422)
	if err := os.WriteFile(fixtures, []byte(testFixtures), 0o600); err != nil {
		t.Fatal(err)
	}
	c.do("POST", "/admin/v1/reset", "", 200)

	// With the database gone, every operation that declares a 500 gives it
	// (an application key never looked up, so no cache answers for it).
	s.m.store.Close()
	bodies := map[string]string{"adminCreateApp": `{"api_key":"k500"}`,
		"adminAddFault": `{"kind":"dial","outcome":"BUSY","api_key":"never-seen"}`,
		"adminAddDNC":   `{"numbers":["0912999001"]}`}
	for key, op := range ops {
		if op.Responses.Status(500) != nil {
			body, ok := bodies[op.OperationID]
			if !ok {
				body = `{}`
			}
			c.do(key[0], adminPath(key[1], "never-seen"), body, 500)
		}
	}

	// The sink behind the admin token, and no sink.
	for access, want := range map[string]int{"admin": 401, "off": 404} {
		other := startServer(t, testFixtures, "DIALBOX_ADMIN_TOKEN="+adminToken, "DIALBOX_SINK_ACCESS="+access)
		oc := &adminContract{t: t, url: other.url, auth: c.auth, seen: c.seen}
		if status, _ := oc.send("POST", "/sink/contract", "", `{"type":"call.completed"}`); status != want {
			t.Errorf("POST /sink/contract with sink.access %s: %d, want %d", access, status, want)
		}
	}

	var missing []string
	for key, op := range ops {
		for code := range op.Responses.Map() {
			if !c.seen[op.OperationID+" "+code] {
				missing = append(missing, fmt.Sprintf("%s %s %s (%s)", key[0], key[1], code, op.OperationID))
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("declared answers not produced (or not valid):\n%s", strings.Join(missing, "\n"))
	}
}

// contractEvents checks the payload of every webhook message s has queued
// against the contract's schema for its event, and hands each on to each.
func contractEvents(t *testing.T, s Store, doc *openapi3.T, each func(typ, payload string)) {
	t.Helper()
	queryRows(t, s, `SELECT event_type, payload FROM webhook_messages`, nil, func(scan func(...any) error) error {
		var typ, payload string
		if err := scan(&typ, &payload); err != nil {
			return err
		}
		item := doc.Webhooks[typ]
		if item == nil || item.Post == nil {
			return fmt.Errorf("event %s is not in the document's webhooks", typ)
		}
		var v any
		if err := json.Unmarshal([]byte(payload), &v); err != nil {
			return err
		}
		schema := item.Post.RequestBody.Value.Content.Get("application/json").Schema.Value
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
			t.Errorf("%s payload refused by the contract: %.1500v\n%s", typ, err, payload)
		}
		each(typ, payload)
		return nil
	})
}

// completedCalls is the data of every call.completed event s has queued,
// by phone, each payload checked against the contract (contractEvents).
func completedCalls[T any](t *testing.T, s Store, doc *openapi3.T) map[string]T {
	t.Helper()
	calls := map[string]T{}
	contractEvents(t, s, doc, func(typ, payload string) {
		if typ != domain.EventCallCompleted {
			return
		}
		var phone struct {
			Data struct {
				Phone string `json:"phone"`
			}
		}
		var call struct{ Data T }
		if json.Unmarshal([]byte(payload), &phone) != nil || json.Unmarshal([]byte(payload), &call) != nil {
			t.Errorf("a call.completed payload not read: %s", payload)
			return
		}
		calls[phone.Data.Phone] = call.Data
	})
	return calls
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
	resp, body := opsDo(t, "POST", m.URL()+"/api/v1/public-api/scenarios/"+store.DemoScenarioID+"/calls", token,
		`{"contacts":`+contacts(phones...)+`}`)
	if resp.StatusCode != 200 {
		t.Fatalf("operation A: %d %s", resp.StatusCode, body)
	}
	count := func() (done int) {
		sqliteAt(t, m.Config.Database).QueryRow(`SELECT count(*) FROM webhook_messages WHERE event_type = 'contact.completed'`).Scan(&done)
		return done
	}
	waitFor(t, "every contact completed", func() bool { return count() >= len(phones) })

	seen := map[string]int{}
	contractEvents(t, m.store, doc, func(typ, _ string) { seen[typ]++ })
	t.Logf("events checked: %v", seen)
	if seen["call.completed"] < len(phones) || seen["contact.completed"] != len(phones) {
		t.Errorf("events checked: %v", seen)
	}
}
