package main

// The built-in webhook sink: what it stores, how it checks signatures, its
// bound, and how the admin API lists and clears it.

import (
	"dialbox/internal/config"
	"dialbox/internal/sandbox"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// postSink sends body to /sink/name signed with secret ("" sends no
// signature headers).
func postSink(t testing.TB, s *testServer, name, secret, id, body string) {
	t.Helper()
	req, err := http.NewRequest("POST", s.url+"/sink/"+name, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if secret != "" {
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		sig, err := wh.Sign(id, now, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		req.Header.Set("webhook-signature", sig)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("sink answered %d", resp.StatusCode)
	}
}

type sinkPage struct {
	Messages []sandbox.SinkMessage
	Count    int
}

func TestSink(t *testing.T) { eachBackend(t, testSink) }

func testSink(t *testing.T, backend string) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	s := startSandboxOn(t, backend, "DIALBOX_SINK_SECRET="+secret, "DIALBOX_SINK_MAX_MESSAGES=3")
	postSink(t, s, "crm", secret, "msg_1", `{"type":"call.completed","id":"evt_1","data":{}}`)
	postSink(t, s, "crm", config.DefaultSinkSecret, "msg_2", `{"type":"contact.completed","id":"evt_2","data":{}}`)
	postSink(t, s, "other", "", "", `not json`)

	var p sinkPage
	s.admin(t, "GET", "/sink", "", &p)
	if p.Count != 3 {
		t.Fatalf("sink %+v", p)
	}
	good, badSig, unsigned := p.Messages[0], p.Messages[1], p.Messages[2]
	if !good.Verified || good.Error != "" || good.Name != "crm" || good.WebhookID != "msg_1" || good.EventType != "call.completed" ||
		string(good.Body) != `{"type":"call.completed","id":"evt_1","data":{}}` || !strings.HasPrefix(good.Signature, "v1,") {
		t.Errorf("signed message %+v", good)
	}
	if badSig.Verified || !strings.Contains(badSig.Error, "no matching signature") {
		t.Errorf("wrongly signed message %+v", badSig)
	}
	if unsigned.Verified || !strings.Contains(unsigned.Error, "missing required headers") ||
		string(unsigned.Body) != "null" || string(unsigned.BodyBase64) != "not json" {
		t.Errorf("unsigned message %+v", unsigned)
	}
	// The console shows a body as the bytes that arrived, JSON or not.
	if _, page := signedIn(t, s).get("/console/sink"); !strings.Contains(page, "<pre>not json</pre>") ||
		!strings.Contains(page, "<pre>{&#34;type&#34;:&#34;call.completed&#34;") {
		t.Errorf("the console's sink page does not show the bodies as received:\n%s", page)
	}

	for query, want := range map[string]int{
		"name=crm": 2, "name=other": 1, "verified=true": 1, "verified=false": 2,
		"event_type=contact.completed": 1, "webhook_id=msg_1": 1, "since=2000-01-01T00:00:00Z": 3,
	} {
		s.admin(t, "GET", "/sink?"+query, "", &p)
		if p.Count != want {
			t.Errorf("%s: %d messages, want %d", query, p.Count, want)
		}
	}
	wantField(t, s.adminFail(t, "GET", "/sink?verified=maybe", "", 400), "verified")

	// The newest max_messages are kept.
	postSink(t, s, "crm", secret, "msg_4", `{"type":"call.completed"}`)
	s.admin(t, "GET", "/sink", "", &p)
	if p.Count != 3 || p.Messages[0].WebhookID != "msg_2" || p.Messages[2].WebhookID != "msg_4" || p.Messages[2].ID != 4 {
		t.Errorf("bounded sink %+v", p)
	}

	s.admin(t, "DELETE", "/sink?name=other", "", nil)
	s.admin(t, "GET", "/sink", "", &p)
	if p.Count != 2 {
		t.Errorf("after clearing one name %+v", p)
	}
	s.admin(t, "DELETE", "/sink", "", nil)
	s.admin(t, "GET", "/sink", "", &p)
	if p.Count != 0 {
		t.Errorf("after clearing all %+v", p)
	}
	// The sink needs no token; the admin API listing it does.
	if status, _ := s.do(t, "GET", "/admin/v1/sink", "", ""); status != 401 {
		t.Errorf("sink list without the admin token: %d", status)
	}
}

// A flood of anonymous posts keeps the sink within sink.max_bytes, all
// names together; a body over sink.max_body_bytes is refused; a body that is
// not JSON is kept as its bytes, not re-encoded.
func TestSinkBoundedInBytes(t *testing.T) {
	const maxBytes = 1 << 20
	s := startSandboxOn(t, "sqlite", "DIALBOX_SINK_MAX_BYTES="+strconv.Itoa(maxBytes))
	if status, body := s.do(t, "POST", "/sink/flood", "", strings.Repeat("\x01", 1<<20)); status != 413 ||
		string(body) != `{"status":0,"code":413,"message":"Webhook body too large"}` {
		t.Errorf("a 1 MB body: %d %s", status, body)
	}
	// Control bytes are what grew 6× as a JSON string.
	raw := make([]byte, 60_000)
	for i := range raw {
		raw[i] = byte(i % 32)
	}
	var last string
	for i := range 100 {
		last = string(raw) + strconv.Itoa(i)
		postSink(t, s, "flood"+strconv.Itoa(i%3), "", "", last)
	}
	messages, retained := s.m.sink.Size()
	if retained > maxBytes || retained < maxBytes-2*len(last) || messages > maxBytes/len(raw) {
		t.Errorf("after the flood the sink keeps %d messages in %d bytes; want the newest that fit in %d", messages, retained, maxBytes)
	}
	if v, ok := metricValue(scrapeMetrics(t, s.url+"/metrics"), "dialbox_memory_retained_bytes", "part", "sink"); !ok || int(v) != retained {
		t.Errorf("dialbox_memory_retained_bytes{part=\"sink\"} = %v, %v; want %d", v, ok, retained)
	}
	var p struct {
		Messages []struct {
			Body       json.RawMessage `json:"body"`
			BodyBase64 []byte          `json:"body_base64"`
		}
	}
	s.admin(t, "GET", "/sink?name=flood0", "", &p)
	if n := len(p.Messages); n == 0 || string(p.Messages[n-1].BodyBase64) != last || string(p.Messages[n-1].Body) != "null" {
		t.Errorf("the newest body is not kept as its bytes")
	}
}

// sink.access: off has no sink, admin takes the admin token, and auto is
// off on a server making real calls without the demo tenant, open on one
// with it (docs/sandbox.md#who-may-post-to-the-sink).
func TestSinkAccess(t *testing.T) {
	off := startSandboxOn(t, "sqlite", "DIALBOX_SINK_ACCESS=off")
	if status, body := off.do(t, "POST", "/sink/qa", "", `{"type":"call.completed"}`); status != 404 {
		t.Errorf("sink.access off: %d %s", status, body)
	}

	admin := startSandboxOn(t, "sqlite", "DIALBOX_SINK_ACCESS=admin")
	if status, body := admin.do(t, "POST", "/sink/qa", "", `{"type":"call.completed"}`); status != 401 ||
		string(body) != `{"status":0,"code":401,"message":"Unauthorized"}` {
		t.Errorf("sink.access admin, no token: %d %s", status, body)
	}
	if status, body := admin.do(t, "POST", "/sink/qa", adminAuth, `{"type":"call.completed"}`); status != 204 {
		t.Errorf("sink.access admin, the admin token: %d %s", status, body)
	}
	var p sinkPage
	admin.admin(t, "GET", "/sink", "", &p)
	if p.Count != 1 {
		t.Errorf("sink.access admin kept %d messages, want 1", p.Count)
	}

	// Real calls: the sink is off for tenants of a fixtures file, open with
	// the demo tenant (its webhook is the sink).
	for _, demo := range []bool{false, true} {
		dir := t.TempDir()
		config := `
database = "` + filepath.Join(dir, "dialbox.db") + `"
[engine]
enabled = false
[dialer]
kind = "sip"
[sip]
listen = "127.0.0.1:0"
rtp_ports = ""
[[sip.trunks]]
name = "main"
address = "127.0.0.1:9"
[tts]
engine = "http"
url = "http://127.0.0.1:9/tts?text={text}"
`
		if !demo {
			writeFileAt(t, filepath.Join(dir, "fixtures.toml"), fmt.Sprintf(sipFixtures, ""))
			config = "fixtures = \"" + filepath.Join(dir, "fixtures.toml") + "\"\n" + config
		}
		writeFileAt(t, filepath.Join(dir, "dialbox.toml"), config)
		m := startMain(t, io.Discard, []string{"--config", filepath.Join(dir, "dialbox.toml")}, nil, nil)
		t.Cleanup(func() { m.Close() })
		want := map[bool]int{false: 404, true: 204}[demo]
		if resp, body := opsDo(t, "POST", m.URL()+"/sink/demo", "", `{"type":"call.completed"}`); resp.StatusCode != want {
			t.Errorf("sink.access auto with real calls, demo tenant %v: %d %s, want %d", demo, resp.StatusCode, body, want)
		}
	}
}
