package main

// Spoken answers in the simulator (docs/voicebot.md#spoken-answers,
// docs/sandbox.md#spoken-answers): speech gathers heard through the rules'
// and the dial faults' says, with what the call said on its webhooks and
// record.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/sandbox"
)

const speechScenario = `
  [[applications.scenarios]]
  id = "ask"
  status = "ACTIVE"
  personalized_fields = ["ho_ten"]
    [applications.scenarios.call_config]
    pool_hotline_key = "P"
    max_concurrent = 20
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
    [applications.scenarios.script]
      [[applications.scenarios.script.steps]]
      name = "ask"
      gather = { input = ["speech"], prompt = { say = "Chào {{ho_ten}}, anh có đến buổi hẹn không?" }, timeout = "5s", retries = 1, branches = { "có" = "yes", "không" = "no", "không có thời gian" = "busy" }, no_input = "silent", no_match = "unclear" }
      [[applications.scenarios.script.steps]]
      name = "yes"
      set = { label = "confirmed", next = "thanks" }
      [[applications.scenarios.script.steps]]
      name = "thanks"
      say = { text = "Cảm ơn {{ho_ten}}." }
      [[applications.scenarios.script.steps]]
      name = "no"
      set = { label = "declined" }
      [[applications.scenarios.script.steps]]
      name = "busy"
      set = { label = "busy" }
      [[applications.scenarios.script.steps]]
      name = "silent"
      set = { label = "no_input" }
      [[applications.scenarios.script.steps]]
      name = "unclear"
      set = { label = "no_match" }
`

// TestVoicebotSpeechGather: callees of the simulator's rules answer a
// speech gather in words, diacritics or not, the longest branch winning;
// one says nothing, one nothing clear; a dial fault makes another speak;
// each call.completed is checked against openapi.yaml.
func TestVoicebotSpeechGather(t *testing.T) { eachBackend(t, testVoicebotSpeechGather) }

func testVoicebotSpeechGather(t *testing.T, backend string) {
	doc := loadContract(t)
	s := openBackendStore(t, backend)
	applyTestFixtures(t, s, voicebotFixtures(speechScenario), time.Now())
	app := int64(queryInt(t, s, `SELECT id FROM applications WHERE api_key = 'bot-key'`))
	answer := func(n string, says ...string) config.SimulatorRule {
		return config.SimulatorRule{Number: n, Outcome: domain.OutcomeAnswered, Says: says}
	}
	d := dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 5000, Rules: []config.SimulatorRule{
		answer("+84912000001", "Dạ có ạ"),
		answer("+84912000002", "KHONG"),
		answer("+84912000003", "dạ không có thời gian đâu"),
		answer("+84912000004"),
		answer("+84912000005", "hả?", "gì vậy"),
		answer("+84912000006", "", "có"),
		answer("+84912000007", "không"), // the fault's words instead
	}})
	faults := sandbox.NewFaults(nil)
	faults.Add(&sandbox.FaultRule{ID: "f", Kind: sandbox.FaultDial, Phone: "+84912000007", Outcome: domain.OutcomeAnswered,
		Says: []string{"co, toi xac nhan"}, Probability: 1})
	engStart(t, s, d, nil, func(p *engine.Parts) { p.ForceDial = faults.BeforeDial })
	phones := []string{"+84912000001", "+84912000002", "+84912000003", "+84912000004", "+84912000005", "+84912000006", "+84912000007"}
	engImport(t, s, app, "ask", "", phones...)
	engWaitAllDone(t, s, app, len(phones))

	calls := completedCalls[botCall](t, s, doc)

	const ask = "bot: Chào Contact %d, anh có đến buổi hẹn không?"
	for _, want := range []struct {
		phone, result, input, speech string
		attempts                     int
		said                         []string
	}{
		{"+84912000001", "confirmed", "Dạ có ạ", "Dạ có ạ", 1, []string{ask, "callee: Dạ có ạ", "bot: Cảm ơn Contact %d."}},
		{"+84912000002", "declined", "KHONG", "KHONG", 1, []string{ask, "callee: KHONG"}},
		{"+84912000003", "busy", "dạ không có thời gian đâu", "dạ không có thời gian đâu", 1, []string{ask, "callee: dạ không có thời gian đâu"}},
		{"+84912000004", "no_input", "", "", 2, []string{ask, ask}},
		{"+84912000005", "no_match", "gì vậy", "gì vậy", 2, []string{ask, "callee: hả?", ask, "callee: gì vậy"}},
		{"+84912000006", "confirmed", "có", "có", 2, []string{ask, ask, "callee: có", "bot: Cảm ơn Contact %d."}},
		{"+84912000007", "confirmed", "co, toi xac nhan", "co, toi xac nhan", 1, []string{ask, "callee: co, toi xac nhan", "bot: Cảm ơn Contact %d."}},
	} {
		c, ok := calls[want.phone]
		if !ok {
			t.Errorf("%s: no call.completed", want.phone)
			continue
		}
		g := c.Steps[0]
		if c.Result != want.result || c.Digits != "" || g.Kind != "gather" || g.Input == nil || *g.Input != want.input ||
			g.Speech == nil || *g.Speech != want.speech || *g.Attempts != want.attempts || *g.TimedOut != (want.speech == "") {
			t.Errorf("%s: result %q, gather %+v (input %v speech %v); want %q, input %q, speech %q, %d attempts", want.phone,
				c.Result, g, deref(g.Input), deref(g.Speech), want.result, want.input, want.speech, want.attempts)
		}
		// Contacts are named Contact 0, 1, ... in the order imported.
		n := strings.Index(strings.Join(phones, " "), want.phone) / (len(want.phone) + 1)
		var lines []string
		for _, l := range want.said {
			if strings.Contains(l, "%d") {
				l = strings.ReplaceAll(l, "%d", string(rune('0'+n)))
			}
			lines = append(lines, l)
		}
		if got := c.said(); got != strings.Join(lines, "\n") {
			t.Errorf("%s: transcript\n%s\nwant\n%s", want.phone, got, strings.Join(lines, "\n"))
		}
	}
	// The callee's turn is when it had been heard, not before the prompt
	// began (at this time_scale, often the same millisecond).
	if c := calls["+84912000001"]; len(c.Transcript) == 3 && c.Transcript[1].At < c.Transcript[0].At {
		t.Errorf("heard at %s, asked at %s", c.Transcript[1].At, c.Transcript[0].At)
	}

	var contactID string
	queryRow(t, s, `SELECT id FROM contacts WHERE phone = '+84912000002'`, nil, &contactID)
	_, records, err := s.Contact(context.Background(), app, contactID)
	if err != nil || len(records) != 1 || !strings.Contains(string(records[0].Transcript), `{"speaker":"callee","text":"KHONG","at":"`) ||
		!strings.Contains(string(records[0].Steps), `"speech":"KHONG"`) {
		t.Errorf("call record %+v, %v", records, err)
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestVoicebotSaysFaults: a dial fault's says is a person speaking
// (ANSWERED); a machine, another outcome, or words out of bounds are
// refused, naming says.
func TestVoicebotSaysFaults(t *testing.T) {
	s := startSandboxOn(t, "sqlite")
	var rule sandbox.FaultRule
	s.admin(t, "POST", "/faults", `{"kind":"dial","phone":"0912000001","says":["Có, tôi xác nhận",""]}`, &rule)
	if rule.Outcome != domain.OutcomeAnswered || len(rule.Says) != 2 || rule.Says[0] != "Có, tôi xác nhận" {
		t.Errorf("says rule %+v", rule)
	}
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"dial","machine":true,"says":["có"]}`, 400), "says")
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"dial","outcome":"BUSY","says":["có"]}`, 400), "says")
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"dial","says":["`+strings.Repeat("a", 501)+`"]}`, 400), "says")
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"dial","says":["có\nkhông"]}`, 400), "says")
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"error","code":1402,"says":["có"]}`, 400), "says")
}

// TestVoicebotListeningScriptsThroughAdmin: the admin API saves a speech
// gather and an agent step as the issue writes them, and refuses their
// mistakes field by field; without [llm] url it refuses the agent.
func TestVoicebotListeningScriptsThroughAdmin(t *testing.T) {
	agent := `{"script":{"steps":[{"name":"talk","agent":{"prompt":"p","results":["confirmed"]}}]}}`
	e := startSandbox(t).adminFail(t, "PATCH", "/apps/qa-key/scenarios/sc-remind", agent, 400)
	if len(e.Details) != 1 || e.Details[0].Field != "script.steps[0].agent" || !strings.Contains(e.Details[0].Reason, "set [llm] url") {
		t.Errorf("an agent without a model: %+v", e)
	}

	s := startSandbox(t, "DIALBOX_LLM_URL=http://127.0.0.1:1/v1")
	s.admin(t, "PATCH", "/apps/qa-key/scenarios/sc-remind", `{"script":{"steps":[
		{"name":"ask","gather":{"input":["dtmf","speech"],"max_digits":1,"prompt":{"say":"Anh có đến không?"},"timeout":"5s",
			"branches":{"có":"talk","1":"talk"},"hints":["có","không"],"end_silence":"800ms","max_speech":"8s","barge_in":false}},
		{"name":"talk","agent":{"prompt":"Xác nhận lịch hẹn với {{ho_ten}}.","greeting":"Chào {{ho_ten}}.","max_turns":8,
			"results":["confirmed","declined","callback"],"next":"bye"}},
		{"name":"bye","hangup":{}}]}}`, nil)
	var got struct {
		Script json.RawMessage `json:"script"`
	}
	s.admin(t, "GET", "/apps/qa-key/scenarios/sc-remind", "", &got)
	for _, want := range []string{`"input":["dtmf","speech"]`, `"barge_in":false`, `"end_silence":"800ms"`, `"results":["confirmed","declined","callback"]`} {
		if !strings.Contains(string(got.Script), want) {
			t.Errorf("the stored script %s lacks %s", got.Script, want)
		}
	}
	e = s.adminFail(t, "PATCH", "/apps/qa-key/scenarios/sc-remind", `{"script":{"steps":[
		{"name":"ask","gather":{"input":["speech","voice"],"timeout":"5s","branches":{"có":"talk","Co":"talk"},"end_silence":"9s"}},
		{"name":"talk","agent":{"prompt":"","results":[]}}]}}`, 400)
	for _, f := range []string{`script.steps[0].gather.input[1]`, `script.steps[0].gather.branches["có"]`,
		`script.steps[0].gather.end_silence`, `script.steps[1].agent.prompt`, `script.steps[1].agent.results`} {
		wantField(t, e, f)
	}
}
