package main

// Calls' recordings (docs/voicebot.md#recordings): made by the simulator
// and over SIP, listed and served by the admin API, in the webhooks, on
// /metrics, and removed with their contacts, by retention and as orphans.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"dialbox/internal/audio"
	"dialbox/internal/domain"
	"dialbox/internal/recordings"
	"dialbox/internal/script"
	"dialbox/internal/sipcall/sipcalltest"
	"dialbox/internal/store"
)

// recordingScenarios: "rec" records a menu the built-in +84900000010
// answers with 1 a second after it starts (a 70 ms prompt, then a thank
// you of 6 characters: the call talks 1.42 s); "plain" does not record.
const recordingScenarios = `
  [[applications.scenarios]]
  id = "rec"
  status = "ACTIVE"
    [applications.scenarios.call_config]
    pool_hotline_key = "P"
    max_concurrent = 20
    record = true
    [applications.scenarios.call_config.call_window]
    start = "00:00"
    end = "24:00"
    [applications.scenarios.script]
      [[applications.scenarios.script.steps]]
      name = "menu"
      gather = { prompt = { say = "x" }, max_digits = 1, timeout = "5s", branches = { "1" = "thanks" }, no_input = "thanks" }
      [[applications.scenarios.script.steps]]
      name = "thanks"
      say = { text = "Cảm ơn" }
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
`

// recordedCall is what the admin API says of a contact's call.
type recordedCall struct {
	ID           string  `json:"id"`
	RecordingURL *string `json:"recording_url"`
}

func (s *testServer) contactCalls(t *testing.T, contactID string) []recordedCall {
	t.Helper()
	var c struct {
		Calls []recordedCall `json:"calls"`
	}
	s.admin(t, "GET", "/apps/bot-key/contacts/"+contactID, "", &c)
	return c.Calls
}

// recordOne imports phone to scenario sc, waits for its call, and returns
// the contact and its one call.
func recordOne(t *testing.T, s *testServer, sc, phone string) (string, recordedCall) {
	t.Helper()
	app, err := s.m.store.AppByKey(context.Background(), "bot-key")
	if err != nil {
		t.Fatal(err)
	}
	id := engImport(t, s.m.store, app.ID, sc, "", phone)[0]
	waitFor(t, "the call to "+phone, func() bool {
		state, _, _ := engContact(t, s.m.store, id)
		return state == domain.ContactDone
	})
	calls := s.contactCalls(t, id)
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	return id, calls[0]
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestRecordingsSimulated(t *testing.T) { eachBackend(t, testRecordingsSimulated) }

func testRecordingsSimulated(t *testing.T, backend string) {
	doc := loadContract(t)
	s := startServerOn(t, backend, voicebotFixtures(recordingScenarios), "DIALBOX_ADMIN_TOKEN="+testAdminToken,
		"DIALBOX_ENGINE_ENABLED=true", "DIALBOX_SIMULATOR_TIME_SCALE=1000", "DIALBOX_ENGINE_POLL_INTERVAL=10ms")
	dir := recordings.Folder(s.m.Config, store.DataDir(s.m.Config)).Dir
	ctx := context.Background()

	// call_config.record shows only when on, and is a boolean.
	var raw json.RawMessage
	s.admin(t, "GET", "/apps/bot-key/scenarios/plain", "", &raw)
	if strings.Contains(string(raw), `"record"`) {
		t.Errorf("a scenario that does not record shows the key: %s", raw)
	}
	s.admin(t, "GET", "/apps/bot-key/scenarios/rec", "", &raw)
	if !strings.Contains(string(raw), `"record":true`) {
		t.Errorf("record = true not shown: %s", raw)
	}
	wantField(t, s.adminFail(t, "PATCH", "/apps/bot-key/scenarios/plain", `{"call_config":{"record":"yes"}}`, 400), "call_config")

	recID, rec := recordOne(t, s, "rec", "+84900000010")
	busyID, busy := recordOne(t, s, "rec", "+84900000002")
	plainID, plain := recordOne(t, s, "plain", "+84900000010")

	// Listed on the call, with the admin URL of the file.
	path := "/admin/v1/apps/bot-key/contacts/" + recID + "/calls/" + rec.ID + "/recording"
	if rec.RecordingURL == nil || *rec.RecordingURL != s.url+path {
		t.Fatalf("recording_url %v, want %s", rec.RecordingURL, s.url+path)
	}
	if busy.RecordingURL != nil || plain.RecordingURL != nil {
		t.Errorf("calls without a recording list one: %v %v", busy.RecordingURL, plain.RecordingURL)
	}
	file := filepath.Join(dir, rec.ID+".wav")
	for _, id := range []string{busy.ID, plain.ID} {
		if exists(filepath.Join(dir, id+".wav")) {
			t.Errorf("call %s without a recording has a file", id)
		}
	}

	// Downloaded: the file's bytes, as audio/wav.
	resp, body, err := request("GET", s.url+path, adminAuth, "")
	if err != nil {
		t.Fatal(err)
	}
	onDisk, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/wav" || !bytes.Equal(body, onDisk) ||
		resp.ContentLength != int64(len(onDisk)) {
		t.Fatalf("download: %d %s, %d bytes (length %d), file %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"),
			len(body), resp.ContentLength, len(onDisk))
	}
	checkContract(t, "GET", s.url+path, resp.StatusCode, resp.Header, body)
	// As long as the simulated talk, silent but for the 1 at 1 s.
	wav, err := audio.DecodeWAV(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if wav.Rate != 8000 || len(wav.Samples) != 11360 {
		t.Errorf("%d Hz, %v; want 8000 Hz, 1.42 s", wav.Rate, wav.Duration())
	}
	key := wav.Samples[8000:8800]
	if audio.ToneLevel(key, 8000, 697) < 6000 || audio.ToneLevel(key, 8000, 1209) < 6000 || audio.RMS(wav.Samples[:7900]) != 0 {
		t.Errorf("the key 1 is not at 1 s: %.0f %.0f, before it RMS %.0f", audio.ToneLevel(key, 8000, 697),
			audio.ToneLevel(key, 8000, 1209), audio.RMS(wav.Samples[:7900]))
	}
	// Not found: another contact's call, a call without a recording.
	wantMessage := func(path, msg string) {
		t.Helper()
		resp, body, err := request("GET", s.url+path, adminAuth, "")
		if err != nil || resp.StatusCode != 404 || !strings.Contains(string(body), msg) {
			t.Errorf("GET %s: %d %s, want 404 %s", path, resp.StatusCode, body, msg)
		}
		checkContract(t, "GET", s.url+path, resp.StatusCode, resp.Header, body)
	}
	// The console's contact page plays it, from its own route behind the
	// session; without a session the file is not served.
	console := signedIn(t, s)
	_, page := console.get("/console/apps/bot-key/contacts/" + recID)
	player := "/console/apps/bot-key/contacts/" + recID + "/calls/" + rec.ID + "/recording"
	if !strings.Contains(page, `<audio controls preload="metadata" src="`+player+`"></audio> 0:`) {
		t.Errorf("the console's contact page has no player for %s", player)
	}
	if _, page := console.get("/console/apps/bot-key/contacts/" + busyID); strings.Contains(page, "<audio") {
		t.Error("the console shows a player for a call without a recording")
	}
	if resp, got := console.get(player); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "audio/wav" || got != string(onDisk) {
		t.Errorf("console recording: %d %s, %d bytes", resp.StatusCode, resp.Header.Get("Content-Type"), len(got))
	}
	if resp, got := newConsoleClient(t, s.url).get(player); resp.StatusCode != 404 || strings.Contains(got, "RIFF") {
		t.Errorf("console recording without a session: %d", resp.StatusCode)
	}
	wantMessage("/admin/v1/apps/bot-key/contacts/"+plainID+"/calls/"+rec.ID+"/recording", "Call is not found")
	wantMessage("/admin/v1/apps/bot-key/contacts/"+busyID+"/calls/"+busy.ID+"/recording", "Recording is not found")

	// In the webhooks: the URL on the recorded call's, nothing on the others.
	withURL := 0
	contractEvents(t, s.m.store, doc, func(typ, payload string) {
		var ev struct {
			Data struct {
				CallID       string  `json:"call_id"`
				RecordingURL *string `json:"recording_url"`
			}
		}
		json.Unmarshal([]byte(payload), &ev)
		switch {
		case ev.Data.CallID == rec.ID && (ev.Data.RecordingURL == nil || *ev.Data.RecordingURL != s.url+path):
			t.Errorf("%s of the recorded call: recording_url %v", typ, ev.Data.RecordingURL)
		case ev.Data.CallID != rec.ID && strings.Contains(payload, "recording_url"):
			t.Errorf("%s of a call without a recording: %s", typ, payload)
		case ev.Data.CallID == rec.ID:
			withURL++
		}
	})
	if withURL != 2 {
		t.Errorf("%d events carry the recording_url, want call.completed and contact.completed", withURL)
	}

	// Disk use on /metrics.
	diskUse := func() (float64, float64) {
		t.Helper()
		m := scrapeMetrics(t, s.url+"/metrics")
		files, ok1 := metricValue(m, "dialbox_recordings_files")
		size, ok2 := metricValue(m, "dialbox_recordings_bytes")
		if !ok1 || !ok2 {
			t.Fatal("no recordings metrics")
		}
		return files, size
	}
	if files, size := diskUse(); files != 1 || size != float64(len(onDisk)) {
		t.Errorf("metrics: %v files, %v bytes; want 1, %d", files, size, len(onDisk))
	}

	// Retention (90 days by default): kept at 89 days, removed at 91; with
	// retention_days = 0, kept for ever.
	forever := s.m.Config
	forever.Recordings.RetentionDays = 0
	if n, err := recordings.NewSweeper(s.m.store, recordings.Folder(forever, store.DataDir(forever)), forever, discardLog()).Sweep(ctx, time.Now().AddDate(100, 0, 0)); err != nil || n != 0 || !exists(file) {
		t.Errorf("retention 0 removed %d (%v)", n, err)
	}
	if n, err := s.m.sweeper.Sweep(ctx, time.Now().AddDate(0, 0, 89)); err != nil || n != 0 || !exists(file) {
		t.Errorf("at 89 days the sweep removed %d (%v)", n, err)
	}
	if n, err := s.m.sweeper.Sweep(ctx, time.Now().AddDate(0, 0, 91)); err != nil || n != 1 || exists(file) {
		t.Errorf("at 91 days the sweep removed %d (%v); file there: %v", n, err, exists(file))
	}
	if calls := s.contactCalls(t, recID); calls[0].RecordingURL != nil {
		t.Errorf("an expired recording is still listed: %s", *calls[0].RecordingURL)
	}
	wantMessage(path, "Recording is not found")
	if files, size := diskUse(); files != 0 || size != 0 {
		t.Errorf("metrics after retention: %v files, %v bytes", files, size)
	}

	// Orphans: files no call lists go, others in the folder stay.
	for _, name := range []string{"stray.wav", rec.ID + ".wav", "gone.wav.part", "notes.txt"} {
		writeFileAt(t, filepath.Join(dir, name), "x")
	}
	if n, err := s.m.sweeper.Sweep(ctx, time.Now()); err != nil || n != 3 || !exists(filepath.Join(dir, "notes.txt")) {
		t.Errorf("orphan sweep removed %d (%v)", n, err)
	}

	// Deleted with the contact: by a scenario's delete, a reset, an
	// application's delete, through the admin API or the command line.
	for _, del := range []struct{ what, method, path string }{
		{"scenario", "DELETE", "/apps/bot-key/scenarios/rec"},
		{"reset", "POST", "/reset"},
		{"application", "DELETE", "/apps/bot-key"},
		{"command line's application", "CLI", "app delete --app bot-key"},
	} {
		if del.what != "scenario" {
			// The reset brought the fixtures back; make a recording to delete.
			s.admin(t, "POST", "/reset", "", nil)
		}
		_, c := recordOne(t, s, "rec", "+84900000010")
		f := filepath.Join(dir, c.ID+".wav")
		if c.RecordingURL == nil || !exists(f) {
			t.Fatalf("%s: no recording to delete", del.what)
		}
		if del.method == "CLI" {
			var out bytes.Buffer
			args := append(strings.Fields(del.path), "--database", s.db)
			if err := run(ctx, args, &out, []string{"DIALBOX_RECORDINGS_DIR=" + dir}); err != nil {
				t.Fatalf("dialbox %s: %v %s", del.path, err, out.String())
			}
		} else {
			s.admin(t, del.method, del.path, "", nil)
		}
		if exists(f) {
			t.Errorf("the %s's delete left the recording", del.what)
		}
	}
}

// TestRecordingOverSIP: dialbox says a 440 Hz prompt (0.8 s, then a 3 s
// menu, then waits 1 s for a key) while the far end listens to 2 s of it
// then plays 1 kHz for 2 s: the recording is as long as the call talked
// and holds each where it was, alone and together.
func TestRecordingOverSIP(t *testing.T) {
	const to = "+84912000031"
	fe, _ := newScriptFarEnd(t, map[string]sipCallee{to: {greeting: sipcalltest.ToneAt(1000, 2000), greetAt: 100}})
	d, _ := newTestSIPDialer(t, fe)
	var s script.Script
	if err := json.Unmarshal([]byte(`{"start":"hi","steps":[
		{"name":"hi","say":{"text":"hello","next":"menu"}},
		{"name":"menu","gather":{"prompt":{"say":"long menu"},"max_digits":1,"timeout":"1s","branches":{"9":"bye"},"no_input":"bye"}},
		{"name":"bye","hangup":{}}]}`), &s); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "call.wav")
	var res, plain domain.DialResult
	var wg sync.WaitGroup
	wg.Go(func() {
		res = d.Dial(context.Background(), domain.DialRequest{To: to, From: "02873000000", Start: time.Now(), Script: &s, Record: path})
	})
	// Without Record nothing is written.
	wg.Go(func() {
		plain = d.Dial(context.Background(), domain.DialRequest{To: "+84912000032", From: "02873000000", Start: time.Now(), Content: "hello"})
	})
	wg.Wait()
	if res.Outcome != domain.OutcomeAnswered || res.RecordingErr != nil || plain.Outcome != domain.OutcomeAnswered || plain.Recording != 0 {
		t.Fatalf("outcome %s recording %d %v; unrecorded: %s %d", res.Outcome, res.Recording, res.RecordingErr, plain.Outcome, plain.Recording)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d files in the folder, want the one recording", len(entries))
	}
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) != res.Recording {
		t.Fatalf("file of %d bytes (%v), result says %d", len(b), err, res.Recording)
	}
	wav, err := audio.DecodeWAV(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("talked %v, recorded %v", res.Talk, wav.Duration())
	if diff := wav.Duration() - res.Talk; diff < -40*time.Millisecond || diff > 40*time.Millisecond {
		t.Errorf("recorded %v of a call that talked %v", wav.Duration(), res.Talk)
	}
	// dialbox's 3.8 s of prompts are 190 blocks; the far end played after
	// 100 frames.
	ours, theirs := sipcalltest.CheckTwoTones(t, wav.Samples, 190, 100)
	last, blocks := ours[len(ours)-1], len(wav.Samples)/audio.PhoneFrame
	level := func(from, to int, freq float64) float64 { return sipcalltest.ToneLevel(wav.Samples, from, to, freq) }
	// The gather's wait: after both tones, silence; dialbox waited 1 s
	// after its prompt before it hung up.
	end := max(last, theirs[len(theirs)-1]) + 2
	if blocks-last < 48 {
		t.Errorf("the recording ends %d ms after the prompts, want the gather's 1 s wait", (blocks-last)*20)
	}
	if l440, l1000 := level(end, blocks, 440), level(end, blocks, 1000); l440 > 300 || l1000 > 300 {
		t.Errorf("after %d ms, in the gather's wait: 440 Hz at %.0f, 1000 Hz at %.0f, want silence", end*20, l440, l1000)
	}
}
