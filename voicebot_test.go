package main

// Scripted calls (docs/voicebot.md): scripts saved through the admin API
// and fixtures, run by the simulator, and what they did on call records
// and webhooks.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dialbox/internal/admin"
	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/engine"
	"dialbox/internal/recordings"
	"dialbox/internal/sandbox"
	"dialbox/internal/script"
	"dialbox/internal/store"
)

// reminderTOML is the appointment reminder of docs/voicebot.md, as a
// fixtures file writes it.
const reminderTOML = `
    [applications.scenarios.script]
    start = "greet"
      [[applications.scenarios.script.steps]]
      name = "greet"
      say = { text = "Xin chào {{ho_ten}}, nhắc lịch hẹn của bạn lúc 9 giờ sáng mai.", next = "menu" }
      [[applications.scenarios.script.steps]]
      name = "menu"
      gather = { prompt = { say = "Nhấn 1 để xác nhận, nhấn 2 để gặp nhân viên." }, max_digits = 1, timeout = "5s", retries = 2, branches = { "1" = "confirmed", "2" = "agent" }, no_input = "no_input" }
      [[applications.scenarios.script.steps]]
      name = "confirmed"
      set = { label = "confirmed", next = "thanks" }
      [[applications.scenarios.script.steps]]
      name = "thanks"
      say = { text = "Cảm ơn bạn, hẹn gặp lại.", next = "bye" }
      [[applications.scenarios.script.steps]]
      name = "agent"
      set = { label = "wants_agent", next = "transfer" }
      [[applications.scenarios.script.steps]]
      name = "transfer"
      transfer = { to = "sip:agent@example.com" }
      [[applications.scenarios.script.steps]]
      name = "no_input"
      set = { label = "no_input", next = "bye" }
      [[applications.scenarios.script.steps]]
      name = "bye"
      hangup = {}
`

// reminderJSON is the same script as the admin API takes it.
const reminderJSON = `{"start":"greet","steps":[
	{"name":"greet","say":{"text":"Xin chào {{ho_ten}}, nhắc lịch hẹn của bạn lúc 9 giờ sáng mai.","next":"menu"}},
	{"name":"menu","gather":{"prompt":{"say":"Nhấn 1 để xác nhận, nhấn 2 để gặp nhân viên."},"max_digits":1,"timeout":"5s","retries":2,
		"branches":{"1":"confirmed","2":"agent"},"no_input":"no_input"}},
	{"name":"confirmed","set":{"label":"confirmed","next":"thanks"}},
	{"name":"thanks","say":{"text":"Cảm ơn bạn, hẹn gặp lại.","next":"bye"}},
	{"name":"agent","set":{"label":"wants_agent","next":"transfer"}},
	{"name":"transfer","transfer":{"to":"sip:agent@example.com"}},
	{"name":"no_input","set":{"label":"no_input","next":"bye"}},
	{"name":"bye","hangup":{}}]}`

func voicebotFixtures(scenarios string) string {
	return `
[[applications]]
api_key = "bot-key"
api_secret = "bot-secret"
  [[applications.hotline_pools]]
  key = "P"
  numbers = ["02873000001", "02873000002"]
  [[applications.webhooks]]
  url = "http://127.0.0.1:9/hook"
  secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
` + scenarios
}

const voicebotScenarios = `
  [[applications.scenarios]]
  id = "plain"
  status = "ACTIVE"
  content = "Xin chào"
    [applications.scenarios.call_config]
    pool_hotline_key = "P"
    max_concurrent = 20
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
  [[applications.scenarios]]
  id = "bot"
  status = "ACTIVE"
  personalized_fields = ["ho_ten"]
    [applications.scenarios.call_config]
    pool_hotline_key = "P"
    max_concurrent = 20
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
` + reminderTOML

// botCall is a call.completed payload's data, as a receiver reads it.
type botCall struct {
	Phone      string `json:"phone"`
	ScenarioID string `json:"scenario_id"`
	Outcome    string `json:"outcome"`
	Duration   int64  `json:"duration"`
	AnsweredBy string `json:"answered_by"`
	Digits     string `json:"digits"`
	Result     string `json:"result"`
	Steps      []struct {
		Name      string  `json:"name"`
		Kind      string  `json:"kind"`
		StartedAt string  `json:"started_at"`
		EndedAt   string  `json:"ended_at"`
		Input     *string `json:"input"`
		Attempts  *int    `json:"attempts"`
		TimedOut  *bool   `json:"timed_out"`
		Speech    *string `json:"speech"`
	} `json:"steps"`
	Transcript []struct {
		Speaker string `json:"speaker"`
		Text    string `json:"text"`
		At      string `json:"at"`
	} `json:"transcript"`
}

// said is a call's transcript, one "speaker: text" a line.
func (c botCall) said() string {
	var lines []string
	for _, t := range c.Transcript {
		lines = append(lines, t.Speaker+": "+t.Text)
	}
	return strings.Join(lines, "\n")
}

func (c botCall) path() string {
	names := make([]string, len(c.Steps))
	for i, s := range c.Steps {
		names[i] = s.Name
	}
	return strings.Join(names, ">")
}

// TestVoicebotAppointmentReminder: the simulator runs the reminder for a
// callee pressing 1, one pressing 2, one pressing nothing, the built-in
// numbers pressing 1 and answering by voicemail, a dial fault forcing keys,
// and a plain-content scenario; every webhook payload is checked against
// openapi.yaml.
func TestVoicebotAppointmentReminder(t *testing.T) {
	doc := loadContract(t)
	s, _ := openTestStore(t)
	applyTestFixtures(t, s, voicebotFixtures(voicebotScenarios), time.Now())
	var app int64
	if err := sqliteDB(t, s).QueryRow(`SELECT id FROM applications WHERE api_key = 'bot-key'`).Scan(&app); err != nil {
		t.Fatal(err)
	}
	dialer := dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 5000, Rules: []config.SimulatorRule{
		{Number: "+84912000001", Outcome: domain.OutcomeAnswered, Digits: "1", DigitsDelay: config.Duration{Duration: 2 * time.Second}},
		{Number: "+84912000002", Outcome: domain.OutcomeAnswered, Digits: "2"},
		{Number: "+84912000003", Outcome: domain.OutcomeAnswered},
		{Number: "+84912000005", Outcome: domain.OutcomeAnswered, TalkTime: config.Duration{Duration: 40 * time.Second}},
	}})
	faults := sandbox.NewFaults(nil)
	two := "2"
	faults.Add(&sandbox.FaultRule{ID: "f", Kind: sandbox.FaultDial, Phone: "+84912000004", Outcome: domain.OutcomeAnswered, Digits: &two, Probability: 1})
	engStart(t, s, dialer, nil, func(p *engine.Parts) { p.ForceDial = faults.BeforeDial })
	engImport(t, s, app, "bot", "", "+84912000001", "+84912000002", "+84912000003", "+84912000004", "+84900000010", "+84900000011")
	engImport(t, s, app, "plain", "", "+84912000005")
	engWaitAllDone(t, s, app, 7)

	calls := completedCalls[botCall](t, s, doc)

	for _, want := range []struct {
		phone, outcome, answeredBy, digits, result, path string
		attempts                                         int
		timedOut                                         bool
	}{
		{"+84912000001", domain.OutcomeAnswered, "human", "1", "confirmed", "greet>menu>confirmed>thanks>bye", 1, false},
		{"+84912000002", domain.OutcomeAnswered, "human", "2", "wants_agent", "greet>menu>agent>transfer", 1, false},
		{"+84912000003", domain.OutcomeAnswered, "human", "", "no_input", "greet>menu>no_input>bye", 3, true},
		{"+84912000004", domain.OutcomeAnswered, "human", "2", "wants_agent", "greet>menu>agent>transfer", 1, false}, // the fault's keys
		{"+84900000010", domain.OutcomeAnswered, "human", "1", "confirmed", "greet>menu>confirmed>thanks>bye", 1, false},
		{"+84900000011", domain.OutcomeVoiceMail, "machine", "", "no_input", "greet>menu>no_input>bye", 3, true},
	} {
		c, ok := calls[want.phone]
		if !ok {
			t.Errorf("%s: no call.completed", want.phone)
			continue
		}
		if c.Outcome != want.outcome || c.AnsweredBy != want.answeredBy || c.Digits != want.digits || c.Result != want.result || c.path() != want.path {
			t.Errorf("%s: %s by %s, digits %q, result %q, path %s; want %s by %s, %q, %q, %s", want.phone,
				c.Outcome, c.AnsweredBy, c.Digits, c.Result, c.path(), want.outcome, want.answeredBy, want.digits, want.result, want.path)
			continue
		}
		menu := c.Steps[1]
		if menu.Kind != "gather" || menu.Input == nil || *menu.Input != want.digits || menu.Attempts == nil || *menu.Attempts != want.attempts ||
			menu.TimedOut == nil || *menu.TimedOut != want.timedOut {
			t.Errorf("%s: gather step %+v", want.phone, menu)
		}
		if c.Steps[0].Input != nil || c.Steps[0].Kind != "say" || c.Steps[0].StartedAt > c.Steps[0].EndedAt {
			t.Errorf("%s: say step %+v", want.phone, c.Steps[0])
		}
	}
	// Pressing 1 two seconds after the prompt starts: greeting (61
	// characters once {{ho_ten}} is "Contact 0", 4.27 s), 2 s of the
	// prompt, thanks (24 characters, 1.68 s): 7.95 s, billed as 8.
	if c := calls["+84912000001"]; c.Duration != 8 {
		t.Errorf("+84912000001 talked %d s, want 8", c.Duration)
	}
	// What the bot said, its fields filled in, each turn when it began.
	c := calls["+84912000001"]
	if want := "bot: Xin chào Contact 0, nhắc lịch hẹn của bạn lúc 9 giờ sáng mai.\nbot: Nhấn 1 để xác nhận, nhấn 2 để gặp nhân viên.\nbot: Cảm ơn bạn, hẹn gặp lại."; c.said() != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", c.said(), want)
	} else if c.Transcript[1].At != c.Steps[1].StartedAt {
		t.Errorf("the prompt said at %s, its gather started at %s", c.Transcript[1].At, c.Steps[1].StartedAt)
	}
	// Plain content: as before scripts, the call talks its talk_time, one
	// say step, a person, nothing pressed.
	plain := calls["+84912000005"]
	if plain.Outcome != domain.OutcomeAnswered || plain.AnsweredBy != "human" || plain.Digits != "" || plain.Result != "" ||
		plain.path() != "content" || plain.Steps[0].Kind != "say" || plain.Duration != 40 {
		t.Errorf("plain content: %+v", plain)
	}

	// The admin API's call record says the same.
	var contactID string
	if err := sqliteDB(t, s).QueryRow(`SELECT id FROM contacts WHERE phone = '+84912000001'`).Scan(&contactID); err != nil {
		t.Fatal(err)
	}
	_, records, err := s.Contact(context.Background(), app, contactID)
	if err != nil || len(records) != 1 {
		t.Fatalf("call records %+v, %v", records, err)
	}
	if r := records[0]; r.AnsweredBy != "human" || r.Digits != "1" || r.Result != "confirmed" || !strings.Contains(string(r.Steps), `"name":"thanks"`) ||
		!strings.Contains(string(r.Transcript), `{"speaker":"bot","text":"Cảm ơn bạn, hẹn gặp lại.","at":"`) {
		t.Errorf("call record %+v steps %s transcript %s", r, r.Steps, r.Transcript)
	}
}

// TestVoicebotNobodyAnswered: a call nobody picks up says so: unknown,
// nothing pressed, no result, no steps.
func TestVoicebotNobodyAnswered(t *testing.T) {
	res := domain.DialResult{Outcome: domain.OutcomeBusy, Cause: 486, EndedAt: time.Now()}
	r, err := domain.CallResults(res)
	if err != nil || r.AnsweredBy != "unknown" || r.Digits != "" || r.Result != "" || string(r.Steps) != "[]" || string(r.Transcript) != "[]" {
		t.Errorf("busy: %+v %v", r, err)
	}
}

// TestVoicebotCutMidScript: max_duration and the callee hanging up stop a
// script in the step it is in; the call stays ANSWERED with that talk.
func TestVoicebotCutMidScript(t *testing.T) {
	var sc script.Script
	if err := json.Unmarshal([]byte(reminderJSON), &sc); err != nil {
		t.Fatal(err)
	}
	d := dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 1e6, Rules: []config.SimulatorRule{
		{Number: "+84912000001", Outcome: domain.OutcomeAnswered, RingTime: config.Duration{Duration: time.Second}},
		{Number: "+84912000002", Outcome: domain.OutcomeAnswered, RingTime: config.Duration{Duration: time.Second}, HangupAfter: config.Duration{Duration: 6 * time.Second}},
	}})
	for _, tc := range []struct {
		phone   string
		max     time.Duration
		talk    time.Duration
		cause   error
		stopped string
	}{
		{"+84912000001", 3 * time.Second, 3 * time.Second, dialer.ErrMaxDuration, "greet"},   // in the 3.64 s greeting (no ho_ten)
		{"+84912000002", 300 * time.Second, 6 * time.Second, dialer.ErrCalleeHungUp, "menu"}, // in the menu's prompt
		{"+84912000002", 5 * time.Second, 5 * time.Second, dialer.ErrMaxDuration, "menu"},    // the sooner of the two
	} {
		res := d.Dial(context.Background(), domain.DialRequest{To: tc.phone, Attempt: 1, Start: time.Now(), MaxDuration: tc.max, Script: &sc})
		o := res.Script
		if res.Outcome != domain.OutcomeAnswered || res.Talk != tc.talk || o == nil || o.End != script.EndCanceled || !errors.Is(o.Err, tc.cause) {
			t.Errorf("%s max %v: %s talk %v, script %+v", tc.phone, tc.max, res.Outcome, res.Talk, o)
			continue
		}
		if last := o.Steps[len(o.Steps)-1]; last.Name != tc.stopped || o.Result != "" {
			t.Errorf("%s max %v: stopped in %q, result %q", tc.phone, tc.max, last.Name, o.Result)
		}
	}
}

// TestVoicebotSimulatedKeys: barge-in, several keys with a finish key, and
// keys pressed too late for the timeout.
func TestVoicebotSimulatedKeys(t *testing.T) {
	sc := script.Script{Steps: []script.Step{
		{Name: "pin", Gather: &script.Gather{Prompt: &script.Prompt{Say: "Nhập mã PIN rồi nhấn thăng"}, MaxDigits: 6, Timeout: "3s",
			FinishOnKey: "#", Branches: map[string]string{"1234": "ok"}, NoInput: "none", NoMatch: "none"}},
		{Name: "ok", Set: &script.Set{Label: "pin_ok"}},
		{Name: "none", Set: &script.Set{Label: "pin_bad"}},
	}}
	d := dialer.NewSim(config.SimulatorConfig{Seed: 1, TimeScale: 1e6, Rules: []config.SimulatorRule{
		{Number: "+84912000001", Outcome: domain.OutcomeAnswered, Digits: "1234#"},
		{Number: "+84912000002", Outcome: domain.OutcomeAnswered, Digits: "12", DigitsDelay: config.Duration{Duration: 10 * time.Second}},
	}})
	for phone, want := range map[string]string{"+84912000001": "pin_ok", "+84912000002": "pin_bad"} {
		res := d.Dial(context.Background(), domain.DialRequest{To: phone, Attempt: 1, Start: time.Now(), MaxDuration: time.Hour, Script: &sc})
		if res.Script == nil || res.Script.Result != want {
			t.Errorf("%s: %+v, want %s", phone, res.Script, want)
		}
	}
}

// TestVoicebotAdminValidation: a bad script is a 400 with one detail per
// problem naming the step and field; a script without content is callable;
// operation B shows no script; null removes it.
func TestVoicebotAdminValidation(t *testing.T) { eachBackend(t, testVoicebotAdminValidation) }

func testVoicebotAdminValidation(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	bad := `{"id":"bot","script":{"steps":[
		{"name":"greet","say":{"text":"Xin chào","next":"menu"}},
		{"name":"menu","gather":{"max_digits":1,"timeout":"5s","branches":{"1":"confirm"}}},
		{"name":"menu","set":{"label":"Confirmed"}}]}}`
	e := s.adminFail(t, "POST", "/apps/qa-key/scenarios", bad, 400)
	wantField(t, e, `script.steps[1].gather.branches["1"]`)
	wantField(t, e, `script.steps[2].name`)
	wantField(t, e, `script.steps[2].set.label`)
	for _, d := range e.Details {
		if !strings.HasPrefix(d.Field, "script.steps[") || !strings.HasPrefix(d.Reason, "step \"") {
			t.Errorf("detail %+v does not name its step and field", d)
		}
	}
	var sc script.Script
	if err := json.Unmarshal([]byte(bad[strings.Index(bad, `{"steps"`):len(bad)-1]), &sc); err != nil {
		t.Fatal(err)
	}
	if ps := sc.Validate().(script.Problems); len(e.Details) != len(ps) {
		t.Errorf("%d details for %d problems: %+v", len(e.Details), len(ps), e.Details)
	}
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/scenarios", `{"id":"bot","script":{"steps":[{"name":"x","dance":{}}]}}`, 400), "script")
	wantField(t, s.adminFail(t, "POST", "/apps/qa-key/scenarios", `{"id":"bot","script":{"steps":[]}}`, 400), "script.steps")

	var got admin.Scenario
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"bot","status":"ACTIVE","personalized_fields":["ho_ten"],"script":`+reminderJSON+`}`, &got)
	if got.Script == nil || len(got.Script.Steps) != 8 || got.Content != "" {
		t.Fatalf("created %+v", got)
	}
	if st, e := s.public(t, "qa-key", "qa-secret", "POST", opA("bot"), oneContact); st != 200 {
		t.Errorf("a script without content: %d %+v", st, e)
	}
	_, b := s.do(t, "GET", "/api/v1/public-api/scenarios", bearer(t, "qa-key", "qa-secret"), "")
	if strings.Contains(string(b), `"script"`) || strings.Contains(string(b), "greet") {
		t.Errorf("operation B shows the script: %s", b)
	}
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/scenarios/bot", `{"script":{"steps":[{"name":"a","say":{"text":"x","next":"b"}}]}}`, 400),
		"script.steps[0].say.next")
	s.admin(t, "PATCH", "/apps/qa-key/scenarios/bot", `{"name":"kept"}`, &got)
	if got.Script == nil {
		t.Error("a PATCH without script removed it")
	}
	got = admin.Scenario{} // a scenario without a script is shown without the key
	s.admin(t, "PATCH", "/apps/qa-key/scenarios/bot", `{"script":null}`, &got)
	if got.Script != nil {
		t.Errorf("script null kept %+v", got.Script)
	}
	if _, e := s.public(t, "qa-key", "qa-secret", "POST", opA("bot"), oneContact); e.Code != 1208 {
		t.Errorf("neither content nor script: %+v", e)
	}
}

// TestVoicebotFixtures: a fixtures script is stored as written; a bad one
// names file, line, step and field.
func TestVoicebotFixtures(t *testing.T) {
	s, _ := openTestStore(t)
	applyTestFixtures(t, s, voicebotFixtures(voicebotScenarios), time.Now())
	var app int64
	if err := sqliteDB(t, s).QueryRow(`SELECT id FROM applications WHERE api_key = 'bot-key'`).Scan(&app); err != nil {
		t.Fatal(err)
	}
	sc, err := s.Scenario(context.Background(), app, "bot")
	if err != nil || sc.Script == nil || sc.Script.Start != "greet" || len(sc.Script.Steps) != 8 ||
		sc.Script.Steps[1].Gather.Branches["2"] != "agent" || sc.HasNothingToSay() {
		t.Fatalf("stored %+v %v", sc, err)
	}

	bad := strings.Replace(voicebotScenarios, `"1" = "confirmed"`, `"1" = "confirm"`, 1)
	path := writeFile(t, "fixtures.toml", voicebotFixtures(bad))
	_, err = store.LoadFixtures(path)
	lines := strings.Split(voicebotFixtures(bad), "\n")
	line := 0
	for i, l := range lines {
		if strings.Contains(l, `"1" = "confirm"`) {
			line = i + 1
		}
	}
	want := fmt.Sprintf(`%s:%d: applications[0].scenarios[1].script.steps[1].gather.branches["1"]: step "menu": no step named "confirm"`, path, line)
	if err == nil || err.Error() != want {
		t.Errorf("got  %v\nwant %s", err, want)
	}
	_, err = store.LoadFixtures(writeFile(t, "f.toml", voicebotFixtures(strings.Replace(voicebotScenarios, `name = "bye"`, `name = "bye"
      dance = 1`, 1))))
	if err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Errorf("unknown key in a step: %v", err)
	}
}

// TestVoicebotDialFaults: dial fault rules force a simulated callee's keys
// (ANSWERED) or a voicemail box (VOICE_MAIL); contradictions are refused.
func TestVoicebotDialFaults(t *testing.T) { eachBackend(t, testVoicebotDialFaults) }

func testVoicebotDialFaults(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var rule sandbox.FaultRule
	s.admin(t, "POST", "/faults", `{"kind":"dial","phone":"0912000001","digits":"1"}`, &rule)
	if rule.Outcome != domain.OutcomeAnswered || rule.Digits == nil || *rule.Digits != "1" {
		t.Errorf("digits rule %+v", rule)
	}
	rule = sandbox.FaultRule{}
	s.admin(t, "POST", "/faults", `{"kind":"dial","machine":true}`, &rule)
	if rule.Outcome != domain.OutcomeVoiceMail || !rule.Machine {
		t.Errorf("machine rule %+v", rule)
	}
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"dial","machine":true,"digits":"1"}`, 400), "digits")
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"dial","machine":true,"outcome":"BUSY"}`, 400), "machine")
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"dial","digits":"1","outcome":"BUSY"}`, 400), "digits")
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"dial","digits":"12a"}`, 400), "digits")
	wantField(t, s.adminFail(t, "POST", "/faults", `{"kind":"error","code":1402,"machine":true}`, 400), "machine")

	f := sandbox.NewFaults(nil)
	one := "1"
	f.Add(&sandbox.FaultRule{ID: "d", Kind: sandbox.FaultDial, Outcome: domain.OutcomeAnswered, Digits: &one, Probability: 1})
	if force, ok := f.BeforeDial(1, "+84912000001"); !ok || force.Outcome != domain.OutcomeAnswered || force.Digits == nil || *force.Digits != "1" {
		t.Errorf("forced %+v %v", force, ok)
	}
}

// TestVoicebotSimulatorRules: the new simulator keys are checked with
// their key named.
func TestVoicebotSimulatorRules(t *testing.T) {
	for _, tc := range []struct {
		rule config.SimulatorRule
		key  string
	}{
		{config.SimulatorRule{Number: "+84912000001", Outcome: domain.OutcomeAnswered, Digits: "1x"}, "simulator.rules[0].digits"},
		{config.SimulatorRule{Number: "+84912000001", Outcome: domain.OutcomeBusy, Digits: "1"}, "simulator.rules[0].digits"},
		{config.SimulatorRule{Number: "+84912000001", Outcome: domain.OutcomeAnswered, Machine: true}, "simulator.rules[0].machine"},
		{config.SimulatorRule{Number: "+84912000001", Outcome: domain.OutcomeAnswered, HangupAfter: config.Duration{Duration: -time.Second}}, "simulator.rules[0]"},
	} {
		cfg := config.SimulatorConfig{Rules: []config.SimulatorRule{tc.rule}}
		var ce *config.ConfigError
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%+v: %v, want key %s", tc.rule, err, tc.key)
		}
	}
	cfg := config.SimulatorConfig{Rules: []config.SimulatorRule{{Number: "+84912000001", Machine: true}}}
	if err := cfg.Validate(); err != nil || cfg.Rules[0].Outcome != domain.OutcomeVoiceMail {
		t.Errorf("machine without outcome: %v %+v", err, cfg.Rules[0])
	}
}

// TestVoicebotMigratedCalls: calls ended before migration 6 read as
// nobody known, nothing pressed, no result, no steps; scenarios as plain
// content.
func TestVoicebotMigratedCalls(t *testing.T) {
	path := t.TempDir() + "/old.db"
	old, err := store.OpenSQLite(path, sqliteMigrations()[:5], store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, old, path)
	for _, q := range []string{
		`INSERT INTO applications (id, name, api_key, api_secret, created_at, updated_at) VALUES (1, 'Old', 'old-key', 'old-secret', 1000, 1000)`,
		`INSERT INTO scenarios (app_id, id, name, status, content, personalized_fields, call_config, created_at, updated_at)
		 VALUES (1, 'sc-old', 'Old', 'ACTIVE', 'Xin chào', '[]', '{}', 1000, 1000)`,
		`INSERT INTO imports (id, app_id, scenario_id, requested, added, skipped, code, created_at) VALUES ('imp', 1, 'sc-old', 1, 1, 0, 1, 1000)`,
		`INSERT INTO contacts (id, app_id, scenario_id, import_id, phone, fields, unique_phone, state, next_attempt_at, created_at, updated_at)
		 VALUES ('c-old', 1, 'sc-old', 'imp', '+84910000001', '{}', 1, 'done', 1000, 1000, 1000)`,
		`INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, state, outcome, cause, started_at, answered_at, ended_at, duration)
		 VALUES ('call-old', (SELECT seq FROM contacts), 1, 1, '02873000001', 'ended', 'ANSWERED', 200, 1000, 2000, 9000, 7)`,
	} {
		storeExec(t, old, q)
	}
	old.Close()
	s, err := store.OpenSQLite(path, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, s, path)
	defer s.Close()
	_, calls, err := s.Contact(context.Background(), 1, "c-old")
	if err != nil || len(calls) != 1 {
		t.Fatalf("%+v %v", calls, err)
	}
	if c := calls[0]; c.AnsweredBy != "unknown" || c.Digits != "" || c.Result != "" || string(c.Steps) != "[]" {
		t.Errorf("migrated call %+v steps %s", c, c.Steps)
	}
	if sc, err := s.Scenario(context.Background(), 1, "sc-old"); err != nil || sc.Script != nil || sc.HasNothingToSay() {
		t.Errorf("migrated scenario %+v %v", sc, err)
	}
}

// A script of the wrong shape is refused naming the field and what it must
// be, in the admin API's words, never the decoder's Go types
// (docs/voicebot.md#saving-a-script).
func TestVoicebotAdminScriptShape(t *testing.T) {
	s := startSandboxOn(t, "sqlite")
	for _, c := range []struct{ script, field, reason string }{
		{`"say hello"`, "script", "must be an object with steps"},
		{`[]`, "script", "must be an object with steps"},
		{`{"steps":"x"}`, "script.steps", "must be an array"},
		{`{"steps":[{"name":1}]}`, "script.steps.name", "must be a string"},
		{`{"steps":[{"name":"x","dance":{}}]}`, "script", `"dance" is not a known field`},
	} {
		e := s.adminFail(t, "POST", "/apps/qa-key/scenarios", `{"id":"bot","script":`+c.script+`}`, 400)
		if len(e.Details) != 1 || e.Details[0].Field != c.field || !strings.Contains(e.Details[0].Reason, c.reason) ||
			strings.Contains(e.Details[0].Reason, "json:") || strings.Contains(e.Details[0].Reason, "Go ") {
			t.Errorf("script %s: %+v; want %s: %q, without the decoder's words", c.script, e.Details, c.field, c.reason)
		}
	}
}
