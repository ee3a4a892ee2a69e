package sandbox

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestFaultHooks checks the hooks the engine and deliverer call, directly.
func TestFaultHooks(t *testing.T) {
	f := NewFaults(nil)
	f.rules = []*FaultRule{
		{ID: "1", Kind: FaultDial, AppID: 7, Phone: "+84912000001", Outcome: "NO_ANSWER", Probability: 1},
		{ID: "2", Kind: FaultWebhook, EndpointID: "ep", Status: http.StatusGone, Probability: 1, Times: 1, Remaining: 1},
	}
	if o, ok := f.BeforeDial(8, "+84912000001"); ok {
		t.Errorf("other app: %+v", o)
	}
	if o, ok := f.BeforeDial(7, "+84912000001"); !ok || o.Outcome != "NO_ANSWER" {
		t.Errorf("dial: %+v %v", o, ok)
	}
	if _, ok := f.BeforeSend("other"); ok {
		t.Error("other endpoint")
	}
	if st, ok := f.BeforeSend("ep"); !ok || st != 410 {
		t.Errorf("send: %d %v", st, ok)
	}
	if _, ok := f.BeforeSend("ep"); ok {
		t.Error("times 1 fired twice")
	}
	b, _ := json.Marshal(f.List())
	if !strings.Contains(string(b), `"hits":1`) || strings.Contains(string(b), `"id":"2"`) {
		t.Errorf("rules after use: %s", b)
	}
}
