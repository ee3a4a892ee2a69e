package main

// Real calls through the engine: a dialbox started as `dialbox serve` with
// dialer.kind = "sip" dials a far end on 127.0.0.1 (sipcalltest, the one
// internal/sipcall's tests use), its prompts rendered by an HTTP TTS engine
// the test serves. Nothing but Go, no network beyond loopback.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dialbox/internal/audio"
	"dialbox/internal/config"
	"dialbox/internal/dialer"
	"dialbox/internal/domain"
	"dialbox/internal/recordings"
	"dialbox/internal/sipcall/sipcalltest"
	"dialbox/internal/store"
	"dialbox/internal/testtool"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo/sip"
)

// sipPassword is the trunk's password; no log line, API answer or metric
// may hold it.
const sipPassword = "trunk-pw-Zq81xK"

const sipAdminToken = "sip-admin-token-0123456789"

// Prompt lengths the test TTS engine renders, by a word in the text.
var sipPromptMS = map[string]int{"long": 3000, "cap": 300}

const sipDefaultPromptMS = 800

// sipFarEnd answers by the callee number's last digit:
// 1 answers and listens to the prompt, 2 is busy, 3 does not exist,
// 4 answers, sends RTP and listens until dialbox hangs up, 6 rings until
// cancelled. It records every INVITE's time and how many calls were up.
type sipFarEnd struct {
	*sipcalltest.FarEnd
	mu      sync.Mutex
	invites []sipInvite
	up      int
	maxUp   int
	heard   map[string]sipcalltest.Heard
	ended   map[string]error // the cause that ended a ringing call
	byes    map[string]bool  // answered calls that ended by the caller's BYE
	ringing map[string]bool
}

type sipInvite struct {
	to string
	at time.Time
}

func newSIPFarEnd(t testing.TB) *sipFarEnd { return newRegistrarSIPFarEnd(t, nil) }

// newRegistrarSIPFarEnd is a sipFarEnd answering REGISTER with reg too.
func newRegistrarSIPFarEnd(t testing.TB, reg *sipcalltest.Registrar) *sipFarEnd {
	f := &sipFarEnd{heard: map[string]sipcalltest.Heard{}, ended: map[string]error{}, byes: map[string]bool{}, ringing: map[string]bool{}}
	f.FarEnd = sipcalltest.NewRegistrarFarEnd(t, false, reg, func(d *diago.DialogServerSession) {
		to := d.InviteRequest.Recipient.User
		f.mu.Lock()
		f.invites = append(f.invites, sipInvite{to, time.Now()})
		f.up++
		f.maxUp = max(f.maxUp, f.up)
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.up--
			f.mu.Unlock()
		}()
		switch to[len(to)-1] {
		case '2':
			d.Respond(sip.StatusBusyHere, "Busy Here", nil)
		case '3':
			d.Respond(sip.StatusNotFound, "Not Found", nil)
		case '6':
			d.Ringing()
			f.mu.Lock()
			f.ringing[to] = true
			f.mu.Unlock()
			<-d.Context().Done()
			f.mu.Lock()
			f.ended[to] = context.Cause(d.Context())
			f.mu.Unlock()
		default:
			// A BYE may cross the far end's answer (a stop right after
			// the 200 OK), ending the handler early or leaving Listen
			// without media to end on: the dialog's end tells it apart.
			go func() {
				<-d.Context().Done()
				f.mu.Lock()
				f.byes[to] = d.LoadState() == sip.DialogStateEnded
				f.mu.Unlock()
			}()
			if d.Answer() != nil {
				return // the caller gave up; its outcome tells the test
			}
			if to[len(to)-1] == '4' {
				go sipcalltest.SendSilence(d)
			}
			h := sipcalltest.Listen(t, d, nil)
			f.mu.Lock()
			f.heard[to] = h
			f.mu.Unlock()
		}
	})
	return f
}

func (f *sipFarEnd) invitesTo(to string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, i := range f.invites {
		if i.to == to {
			n++
		}
	}
	return n
}

// sipTTS is an HTTP TTS engine answering a 440 Hz tone for every text
// (sipPromptMS long), and 500 for a text holding "FAIL".
type sipTTS struct {
	*httptest.Server
	mu    sync.Mutex
	texts []string
}

func newSIPTTS(t testing.TB) *sipTTS {
	s := &sipTTS{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		text := r.URL.Query().Get("text")
		s.mu.Lock()
		s.texts = append(s.texts, text)
		s.mu.Unlock()
		if strings.Contains(text, "FAIL") {
			http.Error(w, "engine broke", http.StatusInternalServerError)
			return
		}
		ms := sipDefaultPromptMS
		for word, n := range sipPromptMS {
			if strings.Contains(text, word) {
				ms = n
			}
		}
		samples, _ := audio.DecodePCM16(sipcalltest.Tone(ms))
		w.Header().Set("Content-Type", "audio/wav")
		audio.EncodeWAV(w, audio.Buffer{Rate: audio.PhoneRate, Samples: samples})
	}))
	t.Cleanup(s.Close)
	return s
}

// sipRig is a dialbox placing real calls to a far end.
type sipRig struct {
	m      *Main
	fe     *sipFarEnd
	tts    *sipTTS
	logs   *testtool.LockedBuffer
	appID  int64
	dir    string
	closed bool
}

// close stops the dialbox (once).
func (r *sipRig) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return r.m.Close()
}

// sipFixtures: a prepaid tenant (1000 per call, 800 a minute) whose pool
// "P" of ten hotlines calls through trunk "main", with scenarios sc
// (a greeting with the contact's name), sc-long (a 3 s prompt cut at
// max_duration 1 s), sc-fail (a text the TTS engine fails on), sc-stop
// (a 3 s prompt, max_duration a minute) and sc-cap (a 0.3 s prompt, many
// calls at once).
const sipFixtures = `
[[applications]]
name = "sip"
api_key = "sip-key"
api_secret = "sip-secret"
  [applications.wallet]
  prepaid = true
  balance = 1000000
  expires_at = 2099-01-01T00:00:00Z
  price_per_call = 1000
  price_per_minute = 800
  [[applications.hotline_pools]]
  key = "P"
  trunk = "main"
  numbers = ["02873000000", "02873000001", "02873000002", "02873000003", "02873000004",
             "02873000005", "02873000006", "02873000007", "02873000008", "02873000009"]
%s`

func sipScenario(id, content string, maxDuration, maxConcurrent int) string {
	return fmt.Sprintf(`
  [[applications.scenarios]]
  id = %q
  status = "ACTIVE"
  content = %q
  personalized_fields = ["ho_ten"]
    [applications.scenarios.call_config]
    pool_hotline_key = "P"
    max_duration = %d
    max_concurrent = %d
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
    timezone = "Asia/Ho_Chi_Minh"
`, id, content, maxDuration, maxConcurrent)
}

var sipScenarios = sipScenario("sc", "Xin chào {{ho_ten}}", 60, 10) +
	sipScenario("sc-long", "long {{ho_ten}}", 1, 10) +
	sipScenario("sc-fail", "FAIL {{ho_ten}}", 60, 10) +
	sipScenario("sc-stop", "long {{ho_ten}}", 60, 10) +
	sipScenario("sc-cap", "cap {{ho_ten}}", 60, 50)

// sipConfig is a config placing real calls through fe's trunk "main"
// (at most channels calls up, cps a second), prompts from tts.
func sipConfig(dir string, fe *sipFarEnd, tts *sipTTS, channels, cps int, extra string) string {
	return fmt.Sprintf(`
database = %q
fixtures = %q
[admin]
token = %q
[engine]
poll_interval = "20ms"
[log]
level = "debug"
flush_interval = "0s"
[dialer]
kind = "sip"
[sip]
listen = "127.0.0.1:0"
rtp_ports = ""
ring_timeout = "10s"
[[sip.trunks]]
name = "main"
address = %q
username = "dialbox"
password = %q
max_channels = %d
max_cps = %d
[tts]
engine = "http"
url = "%s/tts?voice={voice}&text={text}"
cache_dir = %q
%s`, filepath.Join(dir, "dialbox.db"), filepath.Join(dir, "fixtures.toml"), sipAdminToken, fe.Address("udp"),
		sipPassword, channels, cps, tts.URL, filepath.Join(dir, "tts"), extra)
}

func startSIPRig(t *testing.T, channels, cps int) *sipRig {
	t.Helper()
	return startRegisteringSIPRig(t, channels, cps, nil)
}

// startRegisteringSIPRig is startSIPRig whose trunk registers with reg,
// the far end's registrar, when reg is not nil.
func startRegisteringSIPRig(t *testing.T, channels, cps int, reg *sipcalltest.Registrar) *sipRig {
	t.Helper()
	r := &sipRig{fe: newRegistrarSIPFarEnd(t, reg), tts: newSIPTTS(t), logs: &testtool.LockedBuffer{}, dir: t.TempDir()}
	writeFileAt(t, filepath.Join(r.dir, "fixtures.toml"), fmt.Sprintf(sipFixtures, sipScenarios))
	cfg := filepath.Join(r.dir, "dialbox.toml")
	config := sipConfig(r.dir, r.fe, r.tts, channels, cps, "")
	if reg != nil {
		config = strings.Replace(config, "username = \"dialbox\"\n", "username = \"dialbox\"\nregister = true\n", 1)
	}
	writeFileAt(t, cfg, config)
	r.m = startMain(t, r.logs, []string{"--config", cfg}, nil, func(m *Main) { m.SetLogOutput(r.logs) })
	t.Cleanup(func() {
		r.Close()
		if t.Failed() {
			t.Logf("dialbox log:\n%s", r.logs.String())
		}
	})
	app, err := r.m.store.AppByKey(context.Background(), "sip-key")
	if err != nil {
		t.Fatal(err)
	}
	r.appID = app.ID
	return r
}

func writeFileAt(t testing.TB, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// adminCalls is a contact's call records as the admin API answers them.
func (r *sipRig) adminCalls(t *testing.T, contactID string) []domain.CallRecord {
	t.Helper()
	resp, body, err := request("GET", r.m.URL()+"/admin/v1/apps/sip-key/contacts/"+contactID, "Bearer "+sipAdminToken, "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("admin contact: %v %s", err, body)
	}
	var out struct {
		Result struct {
			Calls []domain.CallRecord `json:"calls"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Result.Calls
}

func (r *sipRig) waitDone(t *testing.T, ids ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d contacts done", len(ids)), func() bool {
		for _, id := range ids {
			if state, _, _ := engContact(t, r.m.store, id); state != domain.ContactDone {
				return false
			}
		}
		return true
	})
}

func TestSIPCallsThroughTheEngine(t *testing.T) {
	r := startSIPRig(t, 30, 50)
	s := r.m.store
	answered := engImport(t, s, r.appID, "sc", "", "+84911000001")[0]
	busy := engImport(t, s, r.appID, "sc", "", "+84911000002")[0]
	missing := engImport(t, s, r.appID, "sc", "", "+84911000003")[0]
	long := engImport(t, s, r.appID, "sc-long", "", "+84911000004")[0]
	broken := engImport(t, s, r.appID, "sc-fail", "", "+84911000011")[0]
	r.waitDone(t, answered, busy, missing, long, broken)

	// duration -1: the real talk, from answered_at to ended_at, in started
	// seconds.
	check := func(id, outcome string, cause int64, duration, cost int64) domain.CallRecord {
		t.Helper()
		calls := r.adminCalls(t, id)
		if len(calls) != 1 {
			t.Fatalf("contact %s: %d calls, want 1", id, len(calls))
		}
		c := calls[0]
		if duration < 0 && c.AnsweredAt != nil && c.EndedAt != nil {
			talk := c.EndedAt.Sub(*c.AnsweredAt)
			duration = int64((talk + time.Second - 1) / time.Second)
			if c.Duration == duration+1 && talk%time.Second < 5*time.Millisecond {
				duration++ // the record's milliseconds cut a fraction the bill counted
			}
			t.Logf("contact %s talked %v, billed %d s", id, talk, c.Duration)
		}
		if c.Outcome != outcome || c.Cause == nil || *c.Cause != cause || c.Duration != duration || c.Cost != cost {
			t.Errorf("contact %s: outcome %s cause %v duration %d cost %d; want %s %d %d %d",
				id, c.Outcome, ptrVal(c.Cause), c.Duration, c.Cost, outcome, cause, duration, cost)
		}
		return c
	}

	// Answered: the prompt, rendered with the contact's name, was heard
	// whole, and the real talk billed (1 started minute).
	c := check(answered, domain.OutcomeAnswered, 200, -1, 1000)
	if c.AnsweredAt == nil || c.EndedAt == nil || c.AnsweredAt.Before(c.StartedAt) || c.EndedAt.Before(*c.AnsweredAt) {
		t.Errorf("times: started %v answered %v ended %v", c.StartedAt, c.AnsweredAt, c.EndedAt)
	}
	r.fe.mu.Lock()
	h := r.fe.heard["+84911000001"]
	hLong := r.fe.heard["+84911000004"]
	r.fe.mu.Unlock()
	want := time.Duration(sipDefaultPromptMS) * time.Millisecond
	t.Logf("far end heard %v in %d packets, RMS %.0f (prompt %v)", h.Duration(), h.Packets, h.RMS(), want)
	if d := h.Duration(); d < want*9/10 || d > want*11/10 {
		t.Errorf("far end heard %v of audio, want %v ± 10%%", d, want)
	}
	if rms := h.RMS(); rms < 3000 {
		t.Errorf("far end heard RMS %.0f, want the tone's ~5600, well above silence", rms)
	}
	r.tts.mu.Lock()
	if !slices.Contains(r.tts.texts, "Xin chào Contact 0") {
		t.Errorf("TTS engine was asked for %q, want the content with {{ho_ten}} filled", r.tts.texts)
	}
	r.tts.mu.Unlock()

	check(busy, domain.OutcomeBusy, 486, 0, 0)
	check(missing, domain.OutcomeInvalidNumber, 404, 0, 0)

	// max_duration 1 s cuts a 3 s prompt: ANSWERED, 1 s billed.
	check(long, domain.OutcomeAnswered, 200, 1, 1000)
	if d := hLong.Duration(); d < 500*time.Millisecond || d > 1200*time.Millisecond {
		t.Errorf("far end heard %v of a 3 s prompt cut at max_duration 1 s", d)
	}

	// The TTS engine failed: FAILED with cause 500, nothing dialled, the
	// reason logged.
	check(broken, domain.OutcomeFailed, dialer.CauseTTSFailed, 0, 0)
	if n := r.fe.invitesTo("+84911000011"); n != 0 {
		t.Errorf("%d INVITEs for a call whose prompt failed", n)
	}
	if !strings.Contains(r.logs.String(), "prompt could not be rendered") {
		t.Error("no log line says why the call failed")
	}

	// The prompt is synthesised once: a second call with the same text is
	// served from the cache.
	again := engImport(t, s, r.appID, "sc", "", "+84911000021")[0]
	r.waitDone(t, again)
	r.tts.mu.Lock()
	asked := 0
	for _, text := range r.tts.texts {
		if text == "Xin chào Contact 0" {
			asked++
		}
	}
	r.tts.mu.Unlock()
	if asked != 1 {
		t.Errorf("the same text was synthesised %d times, want 1 (the cache)", asked)
	}

	// /metrics counts the cache: its files and bytes as on disk, its hits
	// and misses.
	files, _ := filepath.Glob(filepath.Join(r.dir, "tts", "*.wav"))
	var onDisk int64
	for _, f := range files {
		if info, err := os.Stat(f); err == nil {
			onDisk += info.Size()
		}
	}
	metrics := scrapeMetrics(t, r.m.URL()+"/metrics")
	entries, okE := metricValue(metrics, "dialbox_tts_cache_entries")
	size, okB := metricValue(metrics, "dialbox_tts_cache_bytes")
	hits, okH := metricValue(metrics, "dialbox_tts_cache_hits_total")
	misses, okM := metricValue(metrics, "dialbox_tts_cache_misses_total")
	_, okEv := metricValue(metrics, "dialbox_tts_cache_evictions_total")
	_, okS := metricValue(metrics, "dialbox_tts_cache_skipped_total")
	if !okE || !okB || !okH || !okM || !okEv || !okS || len(files) == 0 || int(entries) != len(files) || int64(size) != onDisk || hits < 1 || misses < 2 {
		t.Errorf("/metrics: tts cache entries %v bytes %v hits %v misses %v (evictions and skipped shown: %v %v); on disk %d files, %d bytes",
			entries, size, hits, misses, okEv, okS, len(files), onDisk)
	}

	// Every answer and log line, and /metrics, leave the password out.
	sipNoPassword(t, r)
}

func ptrVal(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// sipNoPassword fetches what an operator can see and greps it, with the
// log, for the trunk's password.
func sipNoPassword(t *testing.T, r *sipRig) {
	t.Helper()
	var seen bytes.Buffer
	for _, path := range []string{"/metrics", "/admin/v1/apps", "/admin/v1/apps/sip-key", "/admin/v1/apps/sip-key/pools",
		"/admin/v1/apps/sip-key/pools/P", "/admin/v1/apps/sip-key/contacts", "/admin/v1/clock", "/healthz", "/readyz"} {
		_, body, err := request("GET", r.m.URL()+path, "Bearer "+sipAdminToken, "")
		if err != nil {
			t.Fatal(err)
		}
		seen.Write(body)
	}
	seen.WriteString(r.logs.String())
	fmt.Fprintf(&seen, "%v %+v %#v %s", r.m.Config, r.m.Config, r.m.Config, r.m.Config.SIP.Trunks[0])
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "sip", r.m.Config.SIP)
	seen.Write(logged.Bytes())
	if bytes.Contains(seen.Bytes(), []byte(sipPassword)) {
		i := bytes.Index(seen.Bytes(), []byte(sipPassword))
		t.Errorf("the trunk password leaked: ...%s...", seen.Bytes()[max(0, i-200):i])
	}
	if !strings.Contains(r.logs.String(), "SIP dialer ready") || seen.Len() < 1000 {
		t.Errorf("too little was seen (%d bytes) for the check to mean anything", seen.Len())
	}
}

// TestSIPRegisterThenCall: with register = true dialbox registers with the
// trunk (answering its challenge), /metrics says so, calls go through, and
// the stop removes the binding; the password shows nowhere.
func TestSIPRegisterThenCall(t *testing.T) {
	reg := sipcalltest.NewRegistrar("dialbox", sipPassword, 0)
	r := startRegisteringSIPRig(t, 30, 50, reg)
	registered := func() bool {
		v, ok := metricValue(scrapeMetrics(t, r.m.URL()+"/metrics"), "dialbox_sip_trunk_registered", "trunk", "main")
		return ok && v == 1
	}
	waitFor(t, "trunk main registered", registered)
	got := reg.Received()
	if len(got) != 2 || got[0].Status != 401 || got[1].Status != 200 {
		t.Fatalf("registrar answered %d REGISTERs: %+v", len(got), got)
	}

	answered := engImport(t, r.m.store, r.appID, "sc", "", "+84911000001")[0]
	r.waitDone(t, answered)
	if calls := r.adminCalls(t, answered); len(calls) != 1 || calls[0].Outcome != domain.OutcomeAnswered {
		t.Errorf("call through the registered trunk: %+v", calls)
	}
	sipNoPassword(t, r)

	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	got = reg.Received()
	last := got[len(got)-1]
	if h := last.Req.GetHeader("Expires"); h == nil || h.Value() != "0" || last.Status != 200 {
		t.Errorf("the stop's last REGISTER %v answered %d; want Expires: 0 accepted", last.Req, last.Status)
	}
	if r.m.metrics.TrunkRegistered.DeleteLabelValues("main") {
		t.Error("a stopped dialbox's trunk is still in /metrics")
	}
}

// TestSIPTrunkCapacity: 50 contacts queued on a trunk of 4 channels and 20
// calls a second. The far end counts the calls up at once and stamps each
// INVITE; neither limit is ever passed, and no contact is marked dialing
// beyond them.
func TestSIPTrunkCapacity(t *testing.T) {
	const channels, cps = 4, 20
	r := startSIPRig(t, channels, cps)
	var phones []string
	for i := range 50 {
		phones = append(phones, fmt.Sprintf("+8491300%03d1", i)) // ending in 1: answered
	}
	ids := engImport(t, r.m.store, r.appID, "sc-cap", "", phones...)
	r.waitDone(t, ids...)

	r.fe.mu.Lock()
	defer r.fe.mu.Unlock()
	var times []time.Time
	for _, inv := range r.fe.invites {
		times = append(times, inv.at)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	t.Logf("%d INVITEs over %v, at most %d calls up at once", len(times), times[len(times)-1].Sub(times[0]), r.fe.maxUp)
	if len(times) != 50 {
		t.Errorf("%d INVITEs for 50 contacts", len(times))
	}
	if r.fe.maxUp > channels {
		t.Errorf("%d calls up at once on a trunk of %d channels", r.fe.maxUp, channels)
	}
	if r.fe.maxUp < 2 {
		t.Errorf("never more than %d call up: the test shows nothing", r.fe.maxUp)
	}
	// Calls start 1/cps apart; what separates reserving a start from its
	// INVITE (the claim's commit, the cached prompt) may shift one by a few
	// milliseconds, hence the slack.
	const slack = 100 * time.Millisecond
	for i := 0; i+cps < len(times); i++ {
		if span := times[i+cps].Sub(times[i]); span < time.Second-slack {
			t.Errorf("INVITEs %d to %d (%d calls) within %v: more than %d a second", i, i+cps, cps+1, span, cps)
			break
		}
	}
	for i, c := range ids {
		if calls := engCalls(t, r.m.store, c); len(calls) != 1 || calls[0].Outcome == "" {
			t.Errorf("contact %d: %+v", i, calls)
		}
	}
}

// TestSIPStopHangsUp: a stop CANCELs a ringing call (CANCELED, queued
// again, free) and BYEs an answered one (ANSWERED, its talk billed).
func TestSIPStopHangsUp(t *testing.T) {
	r := startSIPRig(t, 30, 50)
	s := r.m.store
	ringing := engImport(t, s, r.appID, "sc-stop", "", "+84911000006")[0]
	talking := engImport(t, s, r.appID, "sc-stop", "", "+84911000004")[0]
	waitFor(t, "one call ringing and one answered", func() bool {
		r.fe.mu.Lock()
		defer r.fe.mu.Unlock()
		return r.fe.ringing["+84911000006"] && r.fe.up == 2
	})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// The far end answers the CANCEL and the BYE before it marks the
	// call ended, so the stop can return first: wait for the marks.
	// Without dialbox's BYE the answered call either stays up (the wait
	// ends the test) or ends with its dialog not ended (the check below).
	var cause error
	var bye bool
	waitFor(t, "the far end to see both calls end", func() bool {
		r.fe.mu.Lock()
		defer r.fe.mu.Unlock()
		var ended, heard bool
		cause, ended = r.fe.ended["+84911000006"]
		bye, heard = r.fe.byes["+84911000004"]
		return ended && heard
	})
	if !errors.Is(cause, sip.ErrTransactionCanceled) {
		t.Errorf("the ringing call ended by %v at the far end, want dialbox's CANCEL", cause)
	}
	if !bye {
		t.Error("the answered call ended at the far end without dialbox's BYE")
	}

	st, err := store.OpenSQLite(filepath.Join(r.dir, "dialbox.db"), sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, st, filepath.Join(r.dir, "dialbox.db"))
	defer st.Close()
	c := engCalls(t, st, ringing)
	if state, _, _ := engContact(t, st, ringing); len(c) != 1 || c[0].Outcome != domain.OutcomeCanceled || c[0].Cause != 487 || c[0].Cost != 0 || state != domain.ContactQueued {
		t.Errorf("ringing call at the stop: %+v, contact %s", c, state)
	}
	c = engCalls(t, st, talking)
	if state, _, _ := engContact(t, st, talking); len(c) != 1 || c[0].Outcome != domain.OutcomeAnswered || c[0].Cause != 200 || c[0].Cost != 1000 || state != domain.ContactDone {
		t.Errorf("answered call at the stop: %+v, contact %s", c, state)
	}
}

// TestSIPConfigErrorsNameTheKey: a bad [dialer], [sip] or [tts] stops the
// start with the key named.
func TestSIPConfigErrorsNameTheKey(t *testing.T) {
	trunk := "[[sip.trunks]]\nname = \"main\"\naddress = \"127.0.0.1:5070\"\n"
	for _, tc := range []struct{ config, key string }{
		{"[dialer]\nkind = \"pstn\"\n", "dialer.kind"},
		{"[dialer]\nkind = \"sip\"\n", "sip.trunks"},
		{"[sip]\nrtp_ports = \"20000-10000\"\n", "sip.rtp_ports"},
		{"[sip]\nrtp_ports = \"10000\"\n", "sip.rtp_ports"},
		{"[sip]\nlisten = \"0.0.0.0:10002\"\nrtp_ports = \"10000-20000\"\n", "sip.rtp_ports"},
		{"[sip]\nlisten = \"pbx:5060\"\n", "sip.listen"},
		{"[sip]\nnumber_format = \"local\"\n", "sip.number_format"},
		{"[sip]\nring_timeout = \"0s\"\n", "sip.ring_timeout"},
		{trunk + trunk, "sip.trunks[1].name"},
		{trunk + "transport = \"tls\"\n", "sip.trunks[0].transport"},
		{trunk + "number_format = \"x\"\n", "sip.trunks[0].number_format"},
		{trunk + "max_channels = -1\n", "sip.trunks[0].max_channels"},
		{trunk + "register = true\n", "sip.trunks[0].username"},
		{"[[sip.trunks]]\nname = \"main\"\naddress = \"a b\"\n", "sip.trunks[0].address"},
		{"[tts]\nengine = \"festival\"\n", "tts.engine"},
		{"[tts]\nengine = \"command\"\n", "tts.command"},
		{"[tts]\nengine = \"http\"\nurl = \"ftp://x/{text}\"\n", "tts.url"},
		{"[tts]\nengine = \"command\"\ncommand = \"espeak-ng --stdout {text}\"\n", "tts.command"},
		{"[tts]\ncache_max_mib = -1\n", "tts.cache_max_mib"},
		{"[tts]\ncache_max_age = \"-1h\"\n", "tts.cache_max_age"},
		{"[tts]\ncache_min_free_mib = -1\n", "tts.cache_min_free_mib"},
	} {
		path := writeFile(t, "dialbox.toml", tc.config)
		_, err := config.LoadConfig(path, nil)
		var ce *config.ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%q: %v, want an error naming %s", tc.config, err, tc.key)
		}
	}

	// A pool naming a trunk that is not configured: the fixtures' key.
	dir := t.TempDir()
	fe := &sipFarEnd{FarEnd: &sipcalltest.FarEnd{Ports: map[string]int{"udp": 5999}}}
	tts := &sipTTS{Server: &httptest.Server{URL: "http://127.0.0.1:1"}}
	writeFileAt(t, filepath.Join(dir, "fixtures.toml"), strings.Replace(fmt.Sprintf(sipFixtures, ""), `trunk = "main"`, `trunk = "backup"`, 1))
	cfg := filepath.Join(dir, "dialbox.toml")
	writeFileAt(t, cfg, sipConfig(dir, fe, tts, 1, 1, ""))
	m := NewMain(io.Discard)
	m.Log = discardLog()
	if err := m.ParseFlags([]string{"--config", cfg, "--listen", "127.0.0.1:0"}, nil); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	var ce *config.ConfigError
	if !errors.As(err, &ce) || ce.Key != "applications[0].hotline_pools[0].trunk" || ce.Line == 0 {
		t.Errorf("pool with an unknown trunk: %v", err)
	}

	// A username with no password from the file or the environment: a
	// misspelt variable would otherwise fail every call 401/407.
	noPassword := writeFile(t, "nopass.toml", "[[sip.trunks]]\nname = \"main-2\"\naddress = \"pbx\"\nusername = \"dialbox\"\n")
	_, err = config.LoadConfig(noPassword, []string{"DIALBOX_SIP_TRUNK_MAIN2_PASSWORD=misspelt"})
	if !errors.As(err, &ce) || ce.Key != "sip.trunks[0].password" || !strings.Contains(ce.Msg, "DIALBOX_SIP_TRUNK_MAIN_2_PASSWORD") {
		t.Errorf("a trunk with a username and no password: %v, want an error naming sip.trunks[0].password and DIALBOX_SIP_TRUNK_MAIN_2_PASSWORD", err)
	}
	if _, err := config.LoadConfig(noPassword, []string{"DIALBOX_SIP_TRUNK_MAIN_2_PASSWORD=env"}); err != nil {
		t.Errorf("the same trunk with its password in the environment: %v", err)
	}

	// The password comes from the environment too, and wins.
	path := writeFile(t, "env.toml", "[[sip.trunks]]\nname = \"main-2\"\naddress = \"pbx\"\npassword = \"file\"\n")
	c, err := config.LoadConfig(path, []string{"DIALBOX_SIP_TRUNK_MAIN_2_PASSWORD=env"})
	if err != nil || c.SIP.Trunks[0].Password != "env" || c.SIP.Trunks[0].MaxChannels != 30 || c.SIP.Trunks[0].MaxCPS != 5 {
		t.Errorf("trunk from env: %+v, %v", c.SIP.Trunks, err)
	}
}

// TestSIPAdminPoolTrunk: the admin API takes and shows a pool's trunk, and
// refuses one that is not configured.
func TestSIPAdminPoolTrunk(t *testing.T) {
	r := startSIPRig(t, 30, 50)
	do := func(method, path, body string) (int, string) {
		resp, b, err := request(method, r.m.URL()+"/admin/v1/apps/sip-key"+path, "Bearer "+sipAdminToken, body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, body := do("POST", "/pools", `{"key":"Q","trunk":"nope","numbers":["1"]}`); code != 400 || !strings.Contains(body, `"trunk"`) {
		t.Errorf("unknown trunk: %d %s", code, body)
	}
	if code, body := do("POST", "/pools", `{"key":"Q","trunk":"main","numbers":["1"]}`); code != 200 || !strings.Contains(body, `"trunk":"main"`) {
		t.Errorf("create with trunk: %d %s", code, body)
	}
	if code, body := do("GET", "/pools/Q", ""); code != 200 || !strings.Contains(body, `"trunk":"main"`) {
		t.Errorf("show: %d %s", code, body)
	}
	if code, body := do("POST", "/pools", `{"key":"R","numbers":["2"]}`); code != 200 || strings.Contains(body, `"trunk"`) {
		t.Errorf("a pool naming no trunk shows none (the first): %d %s", code, body)
	}
	resp, body, err := request("PUT", r.m.URL()+"/admin/v1/clock", "Bearer "+sipAdminToken, `{"time_scale":2}`)
	if err != nil || resp.StatusCode != 400 || !strings.Contains(string(body), "time_scale") {
		t.Errorf("time_scale changed with real calls: %v %s", err, body)
	}
	// Real calls keep the real time (docs/sandbox.md#the-clock).
	for body, field := range map[string]string{`{"now":"2030-01-01T22:00:00Z"}`: "now", `{"offset_seconds":3600}`: "offset_seconds"} {
		resp, answer, err := request("PUT", r.m.URL()+"/admin/v1/clock", "Bearer "+sipAdminToken, body)
		if err != nil || resp.StatusCode != 400 || !strings.Contains(string(answer), `"field":"`+field+`"`) {
			t.Errorf("%s with real calls: %v %s", body, err, answer)
		}
	}
	resp, body, err = request("GET", r.m.URL()+"/admin/v1/clock", "Bearer "+sipAdminToken, "")
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(body), `"offset_seconds":0`) {
		t.Errorf("the clock with real calls: %v %s", err, body)
	}
}

// TestSIPKilledMidCallSettlesOnce kills the real binary while a real call
// is answered; the restart settles it once (CANCELED, free, one event) and
// dials the contact again.
func TestSIPKilledMidCallSettlesOnce(t *testing.T) {
	bin := dialboxBinary(t)
	fe, tts, dir := newSIPFarEnd(t), newSIPTTS(t), t.TempDir()
	rcv := newWHReceiver(t)
	hook := fmt.Sprintf("\n  [[applications.webhooks]]\n  url = %q\n  secret = %q\n", rcv.URL(), whSecret)
	writeFileAt(t, filepath.Join(dir, "fixtures.toml"), fmt.Sprintf(sipFixtures, sipScenario("sc-stop", "long {{ho_ten}}", 60, 10)+hook))
	addr := freeAddr(t)
	config := filepath.Join(dir, "dialbox.toml")
	writeFileAt(t, config, fmt.Sprintf("listen = %q\n", addr)+sipConfig(dir, fe, tts, 30, 50, ""))
	url := "http://" + addr
	first := engRunBinary(t, bin, config, url)

	token := bearer(t, "sip-key", "sip-secret")
	if code, body := (&testServer{url: url}).do(t, "POST", "/api/v1/public-api/scenarios/sc-stop/calls", token,
		`{"contacts":[{"phone_number":"+84911000004","ho_ten":"K"}]}`); code != 200 || !strings.Contains(string(body), `"status":1`) {
		t.Fatalf("import: %d %s", code, body)
	}
	waitFor(t, "the call answered", func() bool {
		fe.mu.Lock()
		defer fe.mu.Unlock()
		return fe.up == 1 && len(fe.invites) == 1
	})
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.exited

	s, err := store.OpenSQLite(filepath.Join(dir, "dialbox.db"), sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, s, filepath.Join(dir, "dialbox.db"))
	defer s.Close()
	if n := queryInt(t, s, `SELECT count(*) FROM calls WHERE state = 'dialing'`); n != 1 {
		t.Fatalf("%d calls up after the kill, want 1", n)
	}
	var killed string
	sqliteDB(t, s).QueryRow(`SELECT id FROM calls`).Scan(&killed)

	second := engRunBinary(t, bin, config, url)
	waitFor(t, "the contact called again and done", func() bool {
		return queryInt(t, s, `SELECT count(*) FROM contacts WHERE state = 'done'`) == 1 &&
			queryInt(t, s, `SELECT count(*) FROM webhook_messages WHERE state <> 'delivered'`) == 0
	})
	second.cmd.Process.Signal(syscall.SIGTERM)
	<-second.exited

	var outcome string
	var cause, cost int64
	if err := sqliteDB(t, s).QueryRow(`SELECT outcome, cause, cost FROM calls WHERE id = ?`, killed).Scan(&outcome, &cause, &cost); err != nil {
		t.Fatal(err)
	}
	if outcome != domain.OutcomeCanceled || cause != 487 || cost != 0 {
		t.Errorf("the killed call settled %s %d, cost %d; want CANCELED 487, free", outcome, cause, cost)
	}
	if n := queryInt(t, s, `SELECT count(*) FROM webhook_messages WHERE event_type = 'call.completed' AND payload LIKE ?`, "%"+killed+"%"); n != 1 {
		t.Errorf("%d call.completed events for the killed call, want 1", n)
	}
	calls := queryInt(t, s, `SELECT count(*) FROM calls`)
	var spent int64
	sqliteDB(t, s).QueryRow(`SELECT coalesce(sum(cost), 0) FROM calls`).Scan(&spent)
	app, err := s.AppByKey(context.Background(), "sip-key")
	if err != nil {
		t.Fatal(err)
	}
	if w, _ := s.Wallet(context.Background(), app.ID); calls != 2 || spent != 1000 || w.Balance != 1000000-spent {
		t.Errorf("%d calls, %d charged, balance %d: want 2 calls, the second answered and charged once", calls, spent, w.Balance)
	}
	if fe.invitesTo("+84911000004") != 2 {
		t.Errorf("%d INVITEs, want the killed one and the new one", fe.invitesTo("+84911000004"))
	}
}
