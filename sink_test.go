package main

// The built-in webhook sink: what it stores, how it checks signatures, its
// bound, and how the admin API lists and clears it.

import (
	"net/http"
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
	Messages []SinkMessage
	Count    int
}

func TestSink(t *testing.T) { eachBackend(t, testSink) }

func testSink(t *testing.T, backend string) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	s := startSandboxOn(t, backend, "DIALBOX_SINK_SECRET="+secret, "DIALBOX_SINK_MAX_MESSAGES=3")
	postSink(t, s, "crm", secret, "msg_1", `{"type":"call.completed","id":"evt_1","data":{}}`)
	postSink(t, s, "crm", defaultSinkSecret, "msg_2", `{"type":"contact.completed","id":"evt_2","data":{}}`)
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
	if unsigned.Verified || !strings.Contains(unsigned.Error, "missing required headers") || string(unsigned.Body) != `"not json"` {
		t.Errorf("unsigned message %+v", unsigned)
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
