package dialer

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"dialbox/internal/script"
)

// A try runs at once in simulated time, the steps' times the simulated
// call's: three minutes of a gather waiting for keys take no real time (the
// test's deadline is one); a machine on a script without a voicemail step
// runs nothing.
func TestTryIsInstantAndBounded(t *testing.T) {
	var s script.Script
	if err := json.Unmarshal([]byte(`{"steps":[
		{"name":"ask","gather":{"max_digits":1,"timeout":"60s","retries":2,"branches":{"1":"ok"}}},
		{"name":"ok","hangup":{}}]}`), &s); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a generous bound, never reached when instant
	defer cancel()
	out, ran := Trial{}.Try(ctx, s, Callee{}, start)
	if !ran || out.Err != nil || len(out.Steps) != 1 || !out.Steps[0].TimedOut || out.Steps[0].Ended.Sub(start) != 3*time.Minute {
		t.Fatalf("a callee pressing nothing: ran %v, %+v", ran, out)
	}
	out, _ = Trial{}.Try(ctx, s, Callee{Digits: "1"}, start)
	if out.End != script.EndHangup || out.Digits != "1" || len(out.Steps) != 2 || out.Steps[1].Started.Sub(start) != simDigitsDelay {
		t.Errorf("a callee pressing 1: %+v", out)
	}
	if out, ran = (Trial{}).Try(ctx, s, Callee{Machine: true, Digits: "1"}, start); ran || len(out.Steps) != 0 {
		t.Errorf("a machine on a script without a voicemail step ran %+v", out)
	}
}
