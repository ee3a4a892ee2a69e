package main

// The demo tenant's sink webhook from every node (docs/cluster.md#the-demo-tenant):
// its results reach the built-in sink of the node that delivers them, so
// a node that stops takes no other node's deliveries with it.

import (
	"context"
	"dialbox/internal/auth"
	"dialbox/internal/domain"
	"dialbox/internal/testtool"
	"strings"
	"testing"
	"time"
)

// startDemoNode starts a server on db with the demo tenant, its engine
// dialling fast simulated calls and its deliveries retried at once.
func startDemoNode(t *testing.T, db string) *testServer {
	t.Helper()
	m := startMain(t, &strings.Builder{}, []string{"--database", db}, []string{
		"DIALBOX_ADMIN_TOKEN=" + testAdminToken, "DIALBOX_SIMULATOR_TIME_SCALE=1000",
		"DIALBOX_LIMITS_RATE_PER_SECOND=0"}, nil)
	s := &testServer{m: m, url: m.URL(), db: db}
	t.Cleanup(func() {
		if s.m != nil {
			s.m.Close()
		}
	})
	return s
}

// demoResultReachesSink adds phone to the demo scenario through node and
// waits for its contact.completed in that node's sink.
func demoResultReachesSink(t *testing.T, node *testServer, phone string) {
	t.Helper()
	app, err := node.m.store.DemoApp(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	token, err := auth.MintToken(app, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	status, b := node.do(t, "POST", "/api/v1/public-api/scenarios/"+demoScenarioID+"/calls", "Bearer "+token,
		`{"contacts":[{"phone_number":"`+phone+`"}]}`)
	if status != 200 || !strings.Contains(string(b), `"status":1`) {
		t.Fatalf("operation A on %s: %d %s", node.url, status, b)
	}
	defer func() { // the messages say why, should it time out
		if t.Failed() {
			var msgs any
			node.admin(t, "GET", "/apps/demo-key/webhook-messages", "", &msgs)
			t.Logf("the demo's webhook messages: %v", msgs)
		}
	}()
	testtool.WaitFor(t, "the demo's result in "+node.url+"'s sink", time.Minute, func() bool {
		var sink struct{ Count int }
		node.admin(t, "GET", "/sink?name=demo&event_type=contact.completed", "", &sink)
		return sink.Count > 0
	})
}

func TestDemoSinkOnEveryNode(t *testing.T) { eachBackend(t, testDemoSinkOnEveryNode) }

func testDemoSinkOnEveryNode(t *testing.T, backend string) {
	db := backendDatabase(t, backend)
	first := startDemoNode(t, db)
	if backend == "sqlite" {
		// One node: the first-run block's promise, results in this server's sink.
		demoResultReachesSink(t, first, demoPhoneLocal)
		return
	}
	// Two nodes; the one started last stops for good. The first node's
	// deliveries must not have gone to it.
	last := startDemoNode(t, db)
	if err := last.m.Close(); err != nil {
		t.Fatal(err)
	}
	last.m = nil
	var hooks struct{ Webhooks []domain.WebhookEndpoint }
	first.admin(t, "GET", "/apps/demo-key/webhooks", "", &hooks)
	if len(hooks.Webhooks) != 1 || strings.Contains(hooks.Webhooks[0].URL, strings.TrimPrefix(last.url, "http://")) {
		t.Fatalf("demo webhooks %+v: still the stopped node's sink", hooks.Webhooks)
	}
	demoResultReachesSink(t, first, demoPhoneLocal)
}

// TestDemoSinkMovedFromAnAddress: a demo tenant an older dialbox made, its
// webhook on one server's address, is moved to /sink/demo at the next start.
func TestDemoSinkMovedFromAnAddress(t *testing.T) { eachBackend(t, testDemoSinkMovedFromAnAddress) }

func testDemoSinkMovedFromAnAddress(t *testing.T, backend string) {
	db := backendDatabase(t, backend)
	old := startDemoNode(t, db)
	old.exec(t, `UPDATE webhook_endpoints SET url = 'http://127.0.0.1:1/sink/demo'`)
	old.exec(t, `INSERT INTO webhook_endpoints (id, app_id, url, secret, events, enabled, created_at, updated_at)
		SELECT 'other', app_id, 'http://127.0.0.1:1/sink/qa', secret, events, enabled, created_at, updated_at FROM webhook_endpoints`)
	if err := old.m.Close(); err != nil {
		t.Fatal(err)
	}
	old.m = nil
	s := startDemoNode(t, db)
	var hooks struct{ Webhooks []domain.WebhookEndpoint }
	s.admin(t, "GET", "/apps/demo-key/webhooks", "", &hooks)
	urls := map[string]bool{}
	for _, h := range hooks.Webhooks {
		urls[h.URL] = true
	}
	if len(urls) != 2 || !urls["/sink/demo"] || !urls["http://127.0.0.1:1/sink/qa"] {
		t.Errorf("webhooks after the start %+v: want the demo's moved to /sink/demo and the other kept", hooks.Webhooks)
	}
}

// TestWebhookURLForms: an endpoint's URL is an http(s) URL or names the
// built-in sink of the delivering node; nothing else is taken.
func TestWebhookURLForms(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:8080/sink/qa", "https://crm.example/hooks", "/sink/qa", "/sink/demo"} {
		if err := domain.CheckWebhookURL(u); err != nil {
			t.Errorf("%q refused: %v", u, err)
		}
	}
	for _, u := range []string{"", "/sink/", "/sink/a/b", "/sinks/a", "sink/a", "//evil/sink/a", "/sink/a?x=1",
		"/sink/a#x", "/sink/a?", "ftp://host/x", "http://", "file:///sink/a"} {
		if err := domain.CheckWebhookURL(u); err == nil {
			t.Errorf("%q taken", u)
		}
	}
}
