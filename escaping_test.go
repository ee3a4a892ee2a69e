package main

import (
	"bytes"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/sandbox"
	"encoding/json"
	"strings"
	"testing"
)

// TestNoHTMLEscaping: <, > and & reach public answers, admin answers, the
// stored fields and the signed webhook payloads as they were sent, never
// as \u003c, \u003e, \u0026; U+2028 is written \u2028 on every path.
func TestNoHTMLEscaping(t *testing.T) { eachBackend(t, testNoHTMLEscaping) }

func testNoHTMLEscaping(t *testing.T, backend string) {
	const tag = `<b>&</b>`
	s := startSandboxOn(t, backend, "DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000")
	raw := func(what string, body []byte, want ...string) {
		t.Helper()
		for _, w := range want {
			if !bytes.Contains(body, []byte(w)) {
				t.Errorf("%s does not hold %s: %s", what, w, body)
			}
		}
		if bytes.Contains(body, []byte(`\u003c`)) || bytes.Contains(body, []byte(`\u0026`)) {
			t.Errorf("%s escapes HTML: %s", what, body)
		}
	}
	s.admin(t, "POST", "/apps/qa-key/webhooks", `{"url":"`+s.url+`/sink/esc","secret":"`+config.DefaultSinkSecret+`"}`, nil)

	// Operation A's answer, and U+2028 written as encoding/json writes it.
	status, body := s.do(t, "POST", opA("sc-remind"), bearer(t, "qa-key", "qa-secret"),
		`{"contacts":[{"phone_number":"+84900000002","ho_ten":"`+tag+`","note":"a`+"\u2028"+`b"}]}`)
	if status != 200 {
		t.Fatalf("operation A: HTTP %d %s", status, body)
	}
	raw("operation A's answer", body, `"ho_ten":"`+tag+`"`, `"note":"a\u2028b"`)
	var stored string
	queryRow(t, s.m.store, `SELECT fields FROM contacts`, nil, &stored)
	raw("the stored fields", []byte(stored), `"ho_ten":"`+tag+`"`, `"note":"a\u2028b"`)
	_, body = s.do(t, "GET", "/admin/v1/apps/qa-key/contacts", adminAuth, "")
	raw("the admin API's contact list", body, `"ho_ten":"`+tag+`"`)

	// A skipped contact's input, kept for the admin API.
	s.do(t, "POST", opA("sc-remind"), bearer(t, "qa-key", "qa-secret"), `{"contacts":[{"phone_number":"`+tag+`"}]}`)
	_, body = s.do(t, "GET", "/admin/v1/apps/qa-key/imports", adminAuth, "")
	var imports struct {
		Result struct{ Imports []domain.ImportRecord } `json:"result"`
	}
	json.Unmarshal(body, &imports)
	_, body = s.do(t, "GET", "/admin/v1/apps/qa-key/imports/"+imports.Result.Imports[0].ID, adminAuth, "")
	raw("a skipped contact's input", body, `"phone_number":"`+tag+`"`)

	// Admin answers, errors included, and operation B's scenario objects.
	_, body = s.do(t, "POST", "/admin/v1/apps/qa-key/scenarios", adminAuth,
		`{"id":"sc-tag","name":"`+tag+`","status":"ACTIVE","content":"x","personalized_fields":["`+tag+`"]}`)
	raw("the admin API's new scenario", body, `"name":"`+tag+`"`, `"personalized_fields":["`+tag+`"]`)
	s.do(t, "POST", "/admin/v1/apps/qa-key/scenarios", adminAuth, `{"id":"`+tag+`","content":"x"}`)
	_, body = s.do(t, "POST", "/admin/v1/apps/qa-key/scenarios", adminAuth, `{"id":"`+tag+`","content":"x"}`)
	raw("the admin API's 409", body, `"Scenario \"`+tag+`\" already exists"`)
	_, body = s.do(t, "POST", "/admin/v1/apps", adminAuth, `{"name":"`+tag+`"}`)
	raw("the admin API's new application", body, `"name":"`+tag+`"`)
	_, body = s.do(t, "GET", pathB+"?status=ACTIVE&limit=50", bearer(t, "qa-key", "qa-secret"), "")
	raw("operation B", body, `"name":"`+tag+`"`, `"personalized_fields":["`+tag+`"]`)

	// The webhook payloads, as stored, signed and received by the sink.
	var sink struct {
		Messages []sandbox.SinkMessage `json:"messages"`
	}
	waitFor(t, "the contact's webhooks", func() bool {
		s.admin(t, "GET", "/sink?name=esc&event_type=contact.completed", "", &sink)
		return len(sink.Messages) > 0
	})
	if m := sink.Messages[0]; !m.Verified {
		t.Errorf("signature: %s", m.Error)
	}
	raw("the webhook payload", sink.Messages[0].Body, `"ho_ten":"`+tag+`"`, `"note":"a\u2028b"`)
	queryRow(t, s.m.store, `SELECT payload FROM webhook_messages LIMIT 1`, nil, &stored)
	raw("the stored payload", []byte(stored), `"ho_ten":"`+tag+`"`)
	_, body = s.do(t, "GET", "/admin/v1/sink?name=esc", adminAuth, "")
	if !strings.Contains(string(body), tag) {
		t.Errorf("the sink's admin answer: %s", body)
	}
	raw("the sink's admin answer", body)
}
