package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dialbox/internal/audio"
	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/ops"
	"dialbox/internal/script"
	"dialbox/internal/sipcall"
	"dialbox/internal/sipcall/sipcalltest"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// sipCallee is how the far end of TestSIPScript answers one number: it
// presses key once it has heard keyAt packets of audio (20 ms each), and
// accepts a REFER when acceptRefer.
type sipCallee struct {
	key         rune
	keyAt       int
	acceptRefer bool
	// greeting, when set, is what the callee says on answering (then
	// silence), for AMD to judge; after hearing greetAt packets when
	// that is set, so that it starts on dialbox's audio clock.
	greeting []byte
	greetAt  int
}

// sipScriptEnd is what the far end saw of one call.
type sipScriptEnd struct {
	heard   sipcalltest.Heard
	referTo string
}

func newScriptFarEnd(t *testing.T, callees map[string]sipCallee) (*sipcalltest.FarEnd, func(to string) sipScriptEnd) {
	var mu sync.Mutex
	ends := map[string]sipScriptEnd{}
	// ended is closed when the far end has finished with the call to a
	// number: dialbox's Dial returns once its BYE is answered, which may be
	// before the far end's handler has stored what it heard.
	ended := map[string]chan struct{}{}
	endedCh := func(to string) chan struct{} { // the caller holds mu
		if ended[to] == nil {
			ended[to] = make(chan struct{})
		}
		return ended[to]
	}
	fe := sipcalltest.NewFarEnd(t, false, func(d *diago.DialogServerSession) {
		to := d.InviteRequest.Recipient.User
		c := callees[to]
		var end sipScriptEnd
		opts := diago.AnswerOptions{}
		if c.acceptRefer {
			// diago answers 202 before calling this. The call to the
			// target is not placed (one far end stands for both); the
			// final NOTIFY says it was answered, which is what dialbox
			// waits for before its BYE.
			opts.OnRefer = func(r *diago.DialogClientSession) error {
				mu.Lock()
				end.referTo = r.InviteRequest.Recipient.String()
				mu.Unlock()
				return &sipgo.ErrDialogResponse{Res: sip.NewResponse(200, "OK")}
			}
		}
		if d.AnswerOptions(opts) != nil {
			return
		}
		greet := func() { go sipcalltest.SendAudio(d, c.greeting) }
		if c.greeting != nil && c.greetAt == 0 {
			greet()
		}
		sent := false
		h := sipcalltest.Listen(t, d, func(packets int) bool {
			if c.greeting != nil && c.greetAt != 0 && packets == c.greetAt {
				greet()
			}
			if c.key != 0 && !sent && packets >= c.keyAt {
				sent = true
				go func() { _ = sipcalltest.SendDTMF(d.RTPPacketWriter, c.key) }()
			}
			return false
		})
		mu.Lock()
		end.heard = h
		ends[to] = end
		select {
		case <-endedCh(to):
		default:
			close(endedCh(to))
		}
		mu.Unlock()
	})
	return fe, func(to string) sipScriptEnd {
		t.Helper()
		mu.Lock()
		ch := endedCh(to)
		mu.Unlock()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("the far end never finished the call to %s", to)
		}
		mu.Lock()
		defer mu.Unlock()
		return ends[to]
	}
}

// sipReminder is docs/voicebot.md's appointment reminder with its menu's
// prompt and timeout replaced. The test TTS speaks 800 ms for any text but
// one with "long" in it (3 s).
func sipReminder(t *testing.T, menu, timeout string) *script.Script {
	js := strings.Replace(reminderJSON, "Nhấn 1 để xác nhận, nhấn 2 để gặp nhân viên.", menu, 1)
	js = strings.Replace(js, `"timeout":"5s"`, `"timeout":"`+timeout+`"`, 1)
	var s script.Script
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// newTestSIPDialer is a SIP dialer calling fe through trunk "main", and the
// folder of its prompts.
func newTestSIPDialer(t *testing.T, fe *sipcalltest.FarEnd) (*dialer.SIP, string) {
	dir := t.TempDir()
	cfg := config.DefaultConfig()
	cfg.Database = filepath.Join(dir, "dialbox.db")
	tts := newSIPTTS(t)
	cfg.TTS = config.TTSConfig{Engine: "http", URL: tts.URL + "/tts?voice={voice}&text={text}", CacheDir: filepath.Join(dir, "tts")}
	cfg.SIP.Listen = "127.0.0.1:0"
	cfg.SIP.RTPPorts = ""
	cfg.Voicebot.PromptsDir = filepath.Join(dir, "prompts")
	cfg.SIP.Trunks = []config.SIPTrunk{{Name: "main", Address: fe.Address("udp"), MaxChannels: 10, MaxCPS: 10}}
	d, err := dialer.NewSIP(cfg, dir, slog.New(slog.DiscardHandler), ops.NewMetrics("").TrunkRegistered)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, cfg.Voicebot.PromptsDir
}

func TestSIPScript(t *testing.T) {
	const (
		confirm = "+84912000001"
		agent   = "+84912000002"
		silent  = "+84912000003"
		barge   = "+84912000004"
		cut     = "+84912000005"
		refuse  = "+84912000006"
	)
	callees := map[string]sipCallee{
		// 1 pressed after the greeting (40 packets) and the 3 s menu (150).
		confirm: {key: '1', keyAt: 200},
		agent:   {key: '2', keyAt: 200, acceptRefer: true},
		silent:  {},
		// 1 pressed 200 ms into the 3 s menu.
		barge: {key: '1', keyAt: 50},
		cut:   {},
		// Presses 2 and answers the REFER 406, as diago does by default.
		refuse: {key: '2', keyAt: 200},
	}
	fe, farEnd := newScriptFarEnd(t, callees)
	d, _ := newTestSIPDialer(t, fe)
	long := sipReminder(t, "long menu", "1s")
	short := sipReminder(t, "menu", "1s")
	fields := map[string]string{"ho_ten": "An"}

	type want struct {
		result, digits string
		end            script.End
		steps          []string
	}
	cases := []struct {
		to     string
		s      *script.Script
		maxDur time.Duration
		want   want
	}{
		{confirm, long, 0, want{"confirmed", "1", script.EndHangup, []string{"greet", "menu", "confirmed", "thanks", "bye"}}},
		{agent, long, 0, want{"wants_agent", "2", script.EndTransferred, []string{"greet", "menu", "agent", "transfer"}}},
		{silent, short, 0, want{"no_input", "", script.EndHangup, []string{"greet", "menu", "no_input", "bye"}}},
		{barge, long, 0, want{"confirmed", "1", script.EndHangup, []string{"greet", "menu", "confirmed", "thanks", "bye"}}},
		{refuse, long, 0, want{"wants_agent", "2", script.EndFailed, []string{"greet", "menu", "agent", "transfer"}}},
		{cut, long, 1500 * time.Millisecond, want{"", "", script.EndCanceled, []string{"greet", "menu"}}},
	}
	var wg sync.WaitGroup
	results := make([]domain.DialResult, len(cases))
	for i, c := range cases {
		wg.Go(func() {
			results[i] = d.Dial(context.Background(), domain.DialRequest{To: c.to, From: "02873000000", Start: time.Now(),
				MaxDuration: c.maxDur, Script: c.s, Fields: fields})
		})
	}
	wg.Wait()
	for i, c := range cases {
		res := results[i]
		if res.Outcome != domain.OutcomeAnswered || res.Script == nil {
			t.Errorf("%s: outcome %s script %v", c.to, res.Outcome, res.Script)
			continue
		}
		o := res.Script
		var steps []string
		for _, st := range o.Steps {
			steps = append(steps, st.Name)
		}
		if o.Result != c.want.result || o.Digits != c.want.digits || o.End != c.want.end || strings.Join(steps, " ") != strings.Join(c.want.steps, " ") {
			t.Errorf("%s: result %q digits %q end %s (%v) steps %v; want %+v", c.to, o.Result, o.Digits, o.End, o.Err, steps, c.want)
		}
	}

	// The REFER named the script's target, and the final NOTIFY ended the
	// transfer step, not ReferWait.
	if got := farEnd(agent).referTo; !strings.Contains(got, "agent@example.com") {
		t.Errorf("far end was referred to %q", got)
	}
	if steps := results[1].Script.Steps; len(steps) == 4 {
		if took := steps[3].Ended.Sub(steps[3].Started); took >= sipcall.ReferWait {
			t.Errorf("the transfer took %v: no NOTIFY seen", took)
		}
	}
	// Barge-in: the key 200 ms into the 3 s menu stopped it; the far end
	// heard the greeting, that bit of the menu and the thanks: well under
	// the 4.6 s the whole script speaks.
	if h := farEnd(barge).heard.Duration(); h < 1500*time.Millisecond || h > 2500*time.Millisecond {
		t.Errorf("barge-in: far end heard %v, want about 1.8 s", h)
	}
	if h := farEnd(confirm).heard.Duration(); h < 4400*time.Millisecond {
		t.Errorf("no barge-in: far end heard %v, want the whole 4.6 s", h)
	}
	// max_duration cut the menu's prompt.
	if err := results[4].Script.Err; err == nil || !strings.Contains(err.Error(), "406") {
		t.Errorf("refused transfer: error %v, want the 406", err)
	}
	if res := results[5]; res.Talk > 1500*time.Millisecond {
		t.Errorf("max_duration 1.5 s: talk %v", res.Talk)
	}
}

// TestSIPScriptPlay: a play step's WAV, recorded at 16 kHz, is heard at
// its length, resampled to the line's 8 kHz.
func TestSIPScriptPlay(t *testing.T) {
	const to = "+84912000011"
	fe, farEnd := newScriptFarEnd(t, map[string]sipCallee{to: {}})
	d, promptsDir := newTestSIPDialer(t, fe)
	tone8k, _ := audio.DecodePCM16(sipcalltest.Tone(1200))
	tone16k, err := audio.Resample(tone8k, audio.PhoneRate, 16000)
	if err != nil {
		t.Fatal(err)
	}
	var wav bytes.Buffer
	if err := audio.EncodeWAV(&wav, audio.Buffer{Rate: 16000, Samples: tone16k}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(promptsDir, "vi"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFileAt(t, filepath.Join(promptsDir, "vi", "beep.wav"), wav.String())
	var s script.Script
	if err := json.Unmarshal([]byte(`{"start":"p","steps":[{"name":"p","play":{"path":"vi/beep.wav"}}]}`), &s); err != nil {
		t.Fatal(err)
	}
	res := d.Dial(context.Background(), domain.DialRequest{To: to, From: "02873000000", Start: time.Now(), Script: &s})
	if res.Script == nil || res.Script.End != script.EndHangup {
		t.Fatalf("outcome %s script %+v", res.Outcome, res.Script)
	}
	h := farEnd(to).heard
	if got := h.Duration(); got < 1100*time.Millisecond || got > 1300*time.Millisecond || h.RMS() < 3000 {
		t.Errorf("far end heard %v at RMS %.0f, want the 1.2 s tone", got, h.RMS())
	}
}

// TestSIPScriptAMD: with call_config.amd, a long greeting is an answering
// machine (VOICE_MAIL: the call hangs up, or runs the script's voicemail
// step), a short "alô" then silence a person, who gets the script.
func TestSIPScriptAMD(t *testing.T) {
	const (
		machine   = "+84912000021"
		machineVM = "+84912000022"
		human     = "+84912000023"
		noAMD     = "+84912000024"
		notSure   = "+84912000025"
	)
	// Four 500 ms words: a machine once 1.5 s of voice is heard (AMD's
	// LONGGREETING, the third word's end). One 400 ms word then silence:
	// HUMAN after 800 ms of it.
	long := sipcalltest.Words(300, 500, 300, 500, 300, 500, 300, 500)
	alo := sipcalltest.Words(300, 400)
	fe, farEnd := newScriptFarEnd(t, map[string]sipCallee{
		machine: {greeting: long}, machineVM: {greeting: long}, human: {greeting: alo}, noAMD: {greeting: long},
		// 200 ms words 200 ms apart: too short to count, never 800 ms of
		// silence; NOTSURE at 5 s.
		notSure: {greeting: bytes.Repeat(sipcalltest.Words(200, 60), 40)}})
	d, _ := newTestSIPDialer(t, fe)
	var s script.Script
	// script.Validate wants every step reachable from the start: the
	// voicemail step is also a branch.
	if err := json.Unmarshal([]byte(`{"start":"hi","steps":[
		{"name":"hi","gather":{"prompt":{"say":"hi"},"max_digits":1,"timeout":"1s","branches":{"9":"voicemail"},"no_input":"bye"}},
		{"name":"bye","hangup":{}},
		{"name":"voicemail","say":{"text":"message"}}]}`), &s); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		to      string
		amd     bool
		outcome string
		steps   string // "-": no script ran
		by      string
	}{
		{machine, true, domain.OutcomeVoiceMail, "-", domain.AnsweredByMachine},
		{machineVM, true, domain.OutcomeVoiceMail, "voicemail", domain.AnsweredByMachine},
		{human, true, domain.OutcomeAnswered, "hi bye", domain.AnsweredByHuman},
		{noAMD, false, domain.OutcomeAnswered, "hi bye", domain.AnsweredByHuman},
		{notSure, true, domain.OutcomeAnswered, "hi bye", domain.AnsweredByUnknown},
	}
	results := make([]domain.DialResult, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		sc := s
		if c.to == machine {
			sc = script.Script{Start: "hi", Steps: []script.Step{
				{Name: "hi", Gather: &script.Gather{Prompt: s.Steps[0].Gather.Prompt, MaxDigits: 1, Timeout: "1s",
					Branches: map[string]string{"9": "bye"}, NoInput: "bye"}}, s.Steps[1]}}
		}
		wg.Go(func() {
			results[i] = d.Dial(context.Background(), domain.DialRequest{To: c.to, From: "02873000000", Start: time.Now(), Script: &sc, AMD: c.amd})
		})
	}
	wg.Wait()
	for i, c := range cases {
		res := results[i]
		steps := "-"
		if res.Script != nil {
			var names []string
			for _, st := range res.Script.Steps {
				names = append(names, st.Name)
			}
			steps = strings.Join(names, " ")
		}
		r, _ := domain.CallResults(res)
		if by := r.AnsweredBy; res.Outcome != c.outcome || steps != c.steps || res.AnsweredAt == nil || by != c.by {
			t.Errorf("%s: outcome %s steps %q (%+v) answered_by %s; want %s %q %s", c.to, res.Outcome, steps, res.Script, r.AnsweredBy, c.outcome, c.steps, c.by)
		}
	}
	// The machine heard nothing but the voicemail message; with AMD off,
	// the script spoke at once.
	if h := farEnd(machine).heard.Duration(); h > 100*time.Millisecond {
		t.Errorf("machine without a voicemail step heard %v", h)
	}
	if h := farEnd(machineVM).heard.Duration(); h < 700*time.Millisecond || h > 900*time.Millisecond {
		t.Errorf("machine heard %v, want the 800 ms message", h)
	}
}

// TestScenarioAMDSetting: call_config.amd is off by default and then absent
// from the scenario's JSON (its bytes as before), settable by the admin API
// and checked for its type.
func TestScenarioAMDSetting(t *testing.T) { eachBackend(t, testScenarioAMDSetting) }

func testScenarioAMDSetting(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	var raw json.RawMessage
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"amd-off","content":"x"}`, &raw)
	if strings.Contains(string(raw), `"amd"`) {
		t.Errorf("a scenario without AMD shows the key: %s", raw)
	}
	var got struct {
		CallConfig domain.CallConfig `json:"call_config"`
	}
	s.admin(t, "POST", "/apps/qa-key/scenarios", `{"id":"amd-on","content":"x","call_config":{"amd":true}}`, &got)
	if !got.CallConfig.AMD {
		t.Error("call_config.amd = true was not kept")
	}
	s.admin(t, "GET", "/apps/qa-key/scenarios/amd-on", "", &got)
	if !got.CallConfig.AMD {
		t.Error("call_config.amd = true was not stored")
	}
	wantField(t, s.adminFail(t, "PATCH", "/apps/qa-key/scenarios/amd-on", `{"call_config":{"amd":"yes"}}`, 400), "call_config")
}
