package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestAgentSpeaksBeforeTheReplyIsWritten: on a real SIP call, the bot's
// reply reaches the far end while the model has written only its first
// sentence: the model's stub holds the rest back until the far end has
// heard the reply's first packet, so a pipeline that waited for the whole
// reply (or for the whole text before synthesizing) never ends the call
// with the model's result (docs/voicebot.md#conversations-the-agent-step).
func TestAgentSpeaksBeforeTheReplyIsWritten(t *testing.T) {
	r := measure(&latencyRecorder{agent: true, hold: true, heard: make(chan struct{}, 1)}, 3)
	if r.Err != "" {
		t.Fatal(r.Err)
	}
	if len(r.Turns) != 3 {
		t.Fatalf("%d turns measured, want 3", len(r.Turns))
	}
	for i, tt := range r.Turns {
		// The reply's first packet came after the callee's end_silence, and
		// the model was asked after the recognizer answered.
		if !tt.firstPacket.After(tt.end) || tt.llmIn.Before(tt.asrOut) {
			t.Errorf("turn %d out of order: %+v", i, tt)
		}
	}
}

// TestLatencySectionJudgesTheTarget: the report says PASS or MISS by the
// p95 of dialbox's share, and reports a phase that could not measure.
func TestLatencySectionJudgesTheTarget(t *testing.T) {
	turns := func(share ...int) []turnTimes {
		var out []turnTimes
		for _, ms := range share {
			var tt turnTimes
			tt.firstPacket = tt.end.Add(asrStubLatency + latencyTarget*time.Duration(ms)/100)
			tt.stubs = asrStubLatency
			out = append(out, tt)
		}
		return out
	}
	h := &Harness{latency: []latencyResult{
		{Kind: "speech gather", Turns: turns(10, 20, 50, 99, 100), Calls: 1},
		{Kind: "agent conversation", Turns: turns(10, 20, 50, 99, 101), Calls: 1},
		{Kind: "other", Calls: 1, Err: "call 0: outcome FAILED"},
	}}
	var b strings.Builder
	h.latencySection(func(f string, a ...any) { b.WriteString(fmt.Sprintf(f, a...)) })
	out := b.String()
	for _, want := range []string{"**PASS** speech gather", "**MISS** agent conversation", "**MISS** other: not measured: call 0: outcome FAILED"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}
