package main

// Fault rules through the admin API: every code of the spec's error tables
// produced on demand, the rule filters and lifetimes, latency, and the
// dialer and webhook rules with the engine running.

import (
	"dialbox/internal/admin"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/sandbox"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// validRequest is a request of op that succeeds for qa-key without faults.
func validRequest(op string) (method, path, body string) {
	switch op {
	case "A":
		return "POST", opA("sc-remind"), oneContact
	case "B":
		return "GET", pathB, ""
	}
	return "POST", pathC, `{"campaign_id":"camp-1","contacts":[{"phone_number":"0912345678"}]}`
}

func addFault(t testing.TB, s *testServer, body string) sandbox.FaultRule {
	t.Helper()
	var rule sandbox.FaultRule
	s.admin(t, "POST", "/faults", body, &rule)
	return rule
}

// TestFaultEveryErrorCode forces every row of the spec's error tables (and
// dialbox's extensions) once, then checks the next request is served.
func TestFaultEveryErrorCode(t *testing.T) { eachBackend(t, testFaultEveryErrorCode) }

func testFaultEveryErrorCode(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	cases := []struct {
		op      string
		code    int
		message string
	}{
		{"A", 401, "Unauthorized"}, {"A", 1104, "Portal wallet is expired"}, {"A", 1105, "Portal wallet is out of money"},
		{"A", 1201, "Application is not found"}, {"A", 1208, "Scenario content is empty"},
		{"A", 1402, "Import contacts failed"}, {"A", 1403, "All contacts is invalid"},
		{"A", 2301, "Pool hotline is not available"}, {"A", 9999, "Unknown error"},
		{"B", 401, "Unauthorized"}, {"B", 400, "Validation Failed"}, {"B", 1201, "Application is not found"},
		{"B", 9999, "Uknown error"},
		{"C", 401, "Unauthorized"}, {"C", 500, "Lỗi hệ thống"}, {"C", 1201, "Application is not found"},
		{"C", 1402, "Import contacts failed"}, {"C", 1403, "All contacts is invalid"},
		// extensions
		{"A", 3001, "Scenario is not found"}, {"C", 404, "Campaign is not found"}, {"A", 413, "Too many contacts"},
		{"B", 429, "Too many requests"},
	}
	for _, c := range cases {
		rule := addFault(t, s, fmt.Sprintf(`{"kind":"error","operation":%q,"code":%d,"times":1}`, c.op, c.code))
		method, path, body := validRequest(c.op)
		status, b := s.do(t, method, path, bearer(t, "qa-key", "qa-secret"), body)
		want := fmt.Sprintf(`{"status":0,"code":%d,"message":%q}`, c.code, c.message)
		if status != httpx.SemanticStatus(c.code) || string(b) != want {
			t.Errorf("%s %d: HTTP %d %s, want HTTP %d %s", c.op, c.code, status, b, httpx.SemanticStatus(c.code), want)
		}
		if status, b := s.do(t, method, path, bearer(t, "qa-key", "qa-secret"), body); status != 200 {
			t.Errorf("%s %d: the rule fired twice: %d %s", c.op, c.code, status, b)
		}
		var j struct{ Requests []sandbox.JournalEntry }
		s.admin(t, "GET", "/journal?fault="+rule.ID+"&code="+fmt.Sprint(c.code), "", &j)
		if len(j.Requests) != 1 || j.Requests[0].RequestBody != body {
			t.Errorf("%s %d: journal entries naming the rule: %+v", c.op, c.code, j.Requests)
		}
	}
	var list struct{ Faults []sandbox.FaultRule }
	s.admin(t, "GET", "/faults", "", &list)
	if len(list.Faults) != 0 {
		t.Errorf("rules used up are still listed: %+v", list.Faults)
	}

	// always_200 applies to injected errors as to real ones.
	s2 := startSandboxOn(t, backend, "DIALBOX_API_ERROR_HTTP_STATUS=always_200")
	addFault(t, s2, `{"kind":"error","operation":"C","code":500}`)
	method, path, body := validRequest("C")
	if status, b := s2.do(t, method, path, bearer(t, "qa-key", "qa-secret"), body); status != 200 ||
		string(b) != `{"status":0,"code":500,"message":"Lỗi hệ thống"}` {
		t.Errorf("always_200: %d %s", status, b)
	}
}

func TestFaultFiltersAndLifetimes(t *testing.T) { eachBackend(t, testFaultFiltersAndLifetimes) }

func testFaultFiltersAndLifetimes(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	qa := func(op string) int {
		method, path, body := validRequest(op)
		st, _ := s.do(t, method, path, bearer(t, "qa-key", "qa-secret"), body)
		return st
	}

	// One tenant only.
	rule := addFault(t, s, `{"kind":"error","api_key":"other-key","code":1402}`)
	if qa("A") != 200 {
		t.Error("a rule for other-key fired for qa-key")
	}
	if _, e := s.public(t, "other-key", "other-secret", "POST", opA("sc-other"), oneContact); e.Code != 1402 {
		t.Errorf("other-key: %+v", e)
	}
	s.admin(t, "DELETE", "/faults/"+rule.ID, "", nil)
	s.adminFail(t, "DELETE", "/faults/"+rule.ID, "", 404)

	// One scenario: A by its path, C by its campaign's scenario.
	rule = addFault(t, s, `{"kind":"error","scenario_id":"sc-second","code":1402}`)
	if qa("A") != 200 || qa("C") != 200 {
		t.Error("a rule for sc-second fired for sc-remind")
	}
	if _, e := s.public(t, "qa-key", "qa-secret", "POST", opA("sc-second"), oneContact); e.Code != 1402 {
		t.Errorf("A on sc-second: %+v", e)
	}
	if _, e := s.public(t, "qa-key", "qa-secret", "POST", pathC, `{"campaign_id":"camp-2","contacts":[{"phone_number":"0912345678"}]}`); e.Code != 1402 {
		t.Errorf("C on camp-2: %+v", e)
	}
	s.admin(t, "DELETE", "/faults/"+rule.ID, "", nil)

	// Every operation (all three answer 401), until removed, with the given message.
	rule = addFault(t, s, `{"kind":"error","code":401,"message":"Boom","probability":1}`)
	for _, op := range []string{"A", "B", "C", "B"} {
		method, path, body := validRequest(op)
		if st, b := s.do(t, method, path, bearer(t, "qa-key", "qa-secret"), body); st != 401 || string(b) != `{"status":0,"code":401,"message":"Boom"}` {
			t.Errorf("%s: %d %s", op, st, b)
		}
	}
	var list struct{ Faults []sandbox.FaultRule }
	s.admin(t, "GET", "/faults", "", &list)
	if len(list.Faults) != 1 || list.Faults[0].Hits != 4 || list.Faults[0].ID != rule.ID {
		t.Errorf("list %+v", list)
	}
	// The first matching error rule answers; a rule for B leaves A alone.
	addFault(t, s, `{"kind":"error","operation":"B","code":400}`)
	if _, e := s.public(t, "qa-key", "qa-secret", "GET", pathB, ""); e.Code != 401 {
		t.Errorf("first rule should answer: %+v", e)
	}
	s.admin(t, "DELETE", "/faults", "", nil)
	if qa("A") != 200 || qa("B") != 200 || qa("C") != 200 {
		t.Error("rules still fire after clearing")
	}

	// Next N requests.
	addFault(t, s, `{"kind":"error","operation":"A","code":2301,"times":2}`)
	got := []int{qa("A"), qa("A"), qa("A")}
	if got[0] != 503 || got[1] != 503 || got[2] != 200 {
		t.Errorf("times 2: %v", got)
	}

	for body, field := range map[string]string{
		`{"kind":"explode"}`:                                 "kind",
		`{"kind":"error","code":1234}`:                       "code",
		`{"kind":"error","code":1402,"operation":"D"}`:       "operation",
		`{"kind":"error","code":1402,"delay_ms":5}`:          "delay_ms",
		`{"kind":"error","code":1402,"times":-1}`:            "times",
		`{"kind":"error","code":1402,"probability":0}`:       "probability",
		`{"kind":"error","code":1402,"probability":1.5}`:     "probability",
		`{"kind":"error","code":1402,"api_key":"nobody"}`:    "api_key",
		`{"kind":"error","code":1402,"color":"red"}`:         "color",
		`{"kind":"latency"}`:                                 "delay_ms",
		`{"kind":"latency","delay_ms":50,"delay_max_ms":10}`: "delay_max_ms",
		`{"kind":"latency","delay_ms":5,"code":1402}`:        "code",
		`{"kind":"dial","outcome":"MAYBE"}`:                  "outcome",
		`{"kind":"dial","outcome":"BUSY","phone":"12"}`:      "phone",
		`{"kind":"dial","outcome":"BUSY","operation":"A"}`:   "operation",
		`{"kind":"webhook","status":99}`:                     "status",
		`{"kind":"webhook","status":500,"outcome":"BUSY"}`:   "outcome",
	} {
		wantField(t, s.adminFail(t, "POST", "/faults", body, 400), field)
	}
}

func TestFaultLatency(t *testing.T) { eachBackend(t, testFaultLatency) }

func testFaultLatency(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	fixed := addFault(t, s, `{"kind":"latency","operation":"B","api_key":"qa-key","delay_ms":60}`)
	random := addFault(t, s, `{"kind":"latency","operation":"A","delay_ms":20,"delay_max_ms":40,"times":1}`)
	// Only lower bounds are checked: a sleep is never shorter than asked.
	for _, c := range []struct {
		op    string
		least time.Duration
	}{{"B", 60 * time.Millisecond}, {"A", 20 * time.Millisecond}} {
		method, path, body := validRequest(c.op)
		start := time.Now()
		if st, b := s.do(t, method, path, bearer(t, "qa-key", "qa-secret"), body); st != 200 {
			t.Fatalf("%s: %d %s", c.op, st, b)
		}
		if took := time.Since(start); took < c.least {
			t.Errorf("%s took %v, want at least %v", c.op, took, c.least)
		}
	}
	var j struct{ Requests []sandbox.JournalEntry }
	s.admin(t, "GET", "/journal", "", &j)
	if len(j.Requests) != 2 || j.Requests[0].Fault != random.ID || j.Requests[1].Fault != fixed.ID ||
		j.Requests[1].LatencyMS < 60 {
		t.Errorf("journal %+v", j.Requests)
	}
	// Latency and an error together: the answer is late and wrong.
	addFault(t, s, `{"kind":"error","operation":"B","code":9999}`)
	start := time.Now()
	if _, e := s.public(t, "qa-key", "qa-secret", "GET", pathB, ""); e.Code != 9999 || time.Since(start) < 60*time.Millisecond {
		t.Errorf("latency with an error: %+v after %v", e, time.Since(start))
	}
}

// TestFaultDialAndWebhook runs the engine and the deliverer: a dial rule
// forces a call's outcome, webhook rules fail deliveries, and the admin
// API's redeliver and recover bring the messages to the sink.
func TestFaultDialAndWebhook(t *testing.T) { eachBackend(t, testFaultDialAndWebhook) }

func testFaultDialAndWebhook(t *testing.T, backend string) {
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_ENGINE_POLL_INTERVAL=50ms",
		"DIALBOX_WEBHOOKS_RETRY_SCHEDULE=0s,0s,0s")
	s.admin(t, "PUT", "/clock", `{"time_scale":100000}`, nil)
	var ep domain.WebhookEndpoint
	s.admin(t, "POST", "/apps/qa-key/webhooks", fmt.Sprintf(`{"url":%q,"secret":%q}`, s.url+"/sink/qa", config.DefaultSinkSecret), &ep)
	addFault(t, s, `{"kind":"dial","api_key":"qa-key","phone":"0912000001","outcome":"BUSY","times":1}`)
	addFault(t, s, fmt.Sprintf(`{"kind":"webhook","endpoint_id":%q,"status":503,"times":1}`, ep.ID))

	if st, e := qaImport(t, s, `{"contacts":[{"phone_number":"0912000001"}]}`); st != 200 {
		t.Fatalf("import: %+v", e)
	}
	type page struct{ Contacts []domain.ContactRecord }
	var p page
	waitFor(t, "the call to end", func() bool {
		s.admin(t, "GET", "/apps/qa-key/contacts?phone=0912000001&state=done", "", &p)
		return len(p.Contacts) == 1
	})
	var c admin.ContactWithCalls
	s.admin(t, "GET", "/apps/qa-key/contacts/"+p.Contacts[0].ID, "", &c)
	if c.Outcome != "BUSY" || len(c.Calls) != 1 || c.Calls[0].Outcome != "BUSY" {
		t.Fatalf("forced outcome: %+v", c)
	}

	type sinkList struct {
		Messages []sandbox.SinkMessage
		Count    int
	}
	var sl sinkList
	waitFor(t, "both events at the sink", func() bool {
		s.admin(t, "GET", "/sink?name=qa", "", &sl)
		return sl.Count == 2
	})
	for _, m := range sl.Messages {
		if !m.Verified || m.Error != "" || !strings.Contains(string(m.Body), p.Contacts[0].ID) {
			t.Errorf("sink message %+v", m)
		}
	}
	// One of the two first deliveries got the forced 503, then went through.
	// The sink has a message as soon as its answer is written, a moment
	// before the deliverer records the attempt: wait for the records.
	type msgPage struct{ Messages []domain.WebhookMessage }
	var mp msgPage
	waitFor(t, "both messages recorded delivered", func() bool {
		s.admin(t, "GET", "/apps/qa-key/webhook-messages?endpoint_id="+ep.ID+"&state=delivered", "", &mp)
		return len(mp.Messages) == 2
	})
	failed := 0
	for _, m := range mp.Messages {
		var full admin.MessageWithAttempts
		s.admin(t, "GET", "/apps/qa-key/webhook-messages/"+m.ID, "", &full)
		for _, a := range full.AttemptLog {
			if a.StatusCode != nil && *a.StatusCode == 503 {
				failed++
			}
		}
		if full.State != "delivered" {
			t.Errorf("message %+v", full)
		}
	}
	if failed != 1 {
		t.Errorf("%d attempts got the forced 503, want 1", failed)
	}
	var delivered msgPage
	s.admin(t, "GET", "/apps/qa-key/webhook-messages?state=delivered&event_type=contact.completed", "", &delivered)
	if len(delivered.Messages) != 1 {
		t.Fatalf("filtered messages %+v", delivered)
	}

	// Redeliver: the same webhook-id arrives a second time.
	id := delivered.Messages[0].ID
	s.admin(t, "POST", "/apps/qa-key/webhook-messages/"+id+"/redeliver", "", nil)
	waitFor(t, "the redelivery", func() bool {
		s.admin(t, "GET", "/sink?webhook_id="+id, "", &sl)
		return sl.Count == 2
	})
	s.adminFail(t, "POST", "/apps/other-key/webhook-messages/"+id+"/redeliver", "", 404)

	// Recover: every delivery fails until the rule goes; the messages die,
	// then come back to life.
	since := time.Now().UTC().Add(-time.Second).Format(time.RFC3339)
	down := addFault(t, s, `{"kind":"webhook","status":500}`)
	qaImport(t, s, `{"contacts":[{"phone_number":"0912000002"}]}`)
	var dead msgPage
	waitFor(t, "the messages to die", func() bool {
		s.admin(t, "GET", "/apps/qa-key/webhook-messages?state=dead", "", &dead)
		return len(dead.Messages) == 2
	})
	s.admin(t, "DELETE", "/faults/"+down.ID, "", nil)
	var rec struct{ Recovered int }
	s.admin(t, "POST", "/apps/qa-key/webhooks/"+ep.ID+"/recover", fmt.Sprintf(`{"since":%q}`, since), &rec)
	if rec.Recovered != 2 {
		t.Errorf("recovered %d, want 2", rec.Recovered)
	}
	for _, m := range dead.Messages {
		waitFor(t, "a recovered message at the sink", func() bool {
			s.admin(t, "GET", "/sink?webhook_id="+m.ID, "", &sl)
			return sl.Count == 1
		})
	}
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/webhooks/"+ep.ID+"/recover", `{}`, 400), "since")
	wantField(t, s.adminFail(t, "GET", "/apps/qa-key/webhook-messages?state=lost", "", 400), "state")
	s.adminFail(t, "GET", "/apps/qa-key/webhook-messages/nope", "", 404)
}

// A rule forces only a code its operation answers (docs/api.md's tables),
// by the one rule the console's choices follow too: B with 1402 is refused,
// and a rule naming no operation fires only on those that answer its code
// (docs/sandbox.md#3-force-any-error).
func TestFaultCodesTheOperationAnswers(t *testing.T) {
	s := startSandboxOn(t, "sqlite")
	for _, body := range []string{
		`{"kind":"error","operation":"B","code":1402}`,
		`{"kind":"error","operation":"B","code":3001}`,
		`{"kind":"error","operation":"A","code":500}`,
		`{"kind":"error","operation":"C","code":9999}`,
	} {
		e := s.adminFail(t, "POST", "/faults", body, 400)
		wantField(t, e, "code")
	}
	addFault(t, s, `{"kind":"error","code":1402}`)
	addFault(t, s, `{"kind":"error","code":9999}`)
	for op, want := range map[string]int{"A": 1402, "B": 9999, "C": 1402} {
		method, path, body := validRequest(op)
		status, b := s.do(t, method, path, bearer(t, "qa-key", "qa-secret"), body)
		var e httpx.ErrorBody
		json.Unmarshal(b, &e)
		if e.Code != want {
			t.Errorf("%s under rules for 1402 and 9999: HTTP %d %s, want code %d", op, status, b, want)
		}
	}
	// The console offers each operation its own codes, and refuses another.
	for op, codes := range sandbox.OperationCodes {
		for _, code := range codes {
			if !sandbox.Answerable(op, code) {
				t.Errorf("the console offers %s:%d, which the admin API refuses", op, code)
			}
		}
	}
}
