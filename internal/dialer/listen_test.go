package dialer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"dialbox/internal/audio"
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"dialbox/internal/script"
	"dialbox/internal/testtool"
)

// spoken is one word an espeak-ng voice says for the real end-to-end test,
// varied so that a count of tries measures something.
type spoken struct {
	word, voice string
	speed       int
}

// triesOf is n words alternating "yes" and "no", in espeak-ng's English
// voices and speeds.
func triesOf(n int) []spoken {
	voices := []string{"en-us", "en", "en-us+m3", "en+f2", "en-gb-x-rp", "en-us+f3", "en-029", "en+m7"}
	speeds := []int{175, 150, 200, 165, 185}
	var out []spoken
	for i := range n {
		out = append(out, spoken{word: []string{"yes", "no"}[i%2], voice: voices[i%len(voices)], speed: speeds[i%len(speeds)]})
	}
	return out
}

// TestListenRecognizesASpokenYes is the real thing: baresip answers a SIP
// call and says "yes" (espeak-ng, through its aufile source), Debian's
// pocketsphinx, through the "command" engine and the wrapper in contrib/
// with a grammar of the hints, hears it, and the scenario's speech gather
// takes the "yes" branch. DIALBOX_LISTEN_TRIES=20
// measures recognition over that many calls, "yes" and "no" in turn
// (docs/voicebot.md#recognizers).
func TestListenRecognizesASpokenYes(t *testing.T) {
	baresip := testtool.Require(t, "baresip", "baresip")
	espeak := testtool.Require(t, "espeak-ng", "espeak-ng")
	testtool.Require(t, "pocketsphinx_continuous", "pocketsphinx pocketsphinx-en-us")
	if _, err := os.Stat("/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict"); err != nil {
		if os.Getenv("DIALBOX_REQUIRE_TOOLS") == "1" {
			t.Fatalf("pocketsphinx-en-us is required (DIALBOX_REQUIRE_TOOLS=1): %v", err)
		}
		t.Skipf("no English model (apt-get install pocketsphinx-en-us): %v", err)
	}
	wrapper, err := filepath.Abs(filepath.Join("..", "..", "contrib", "pocketsphinx-hints"))
	if err != nil {
		t.Fatal(err)
	}
	n := 2
	if s := os.Getenv("DIALBOX_LISTEN_TRIES"); s != "" {
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("DIALBOX_LISTEN_TRIES=%q", s)
		}
	}
	tries := triesOf(n)

	// One baresip, one number per try, each saying its word: a second of
	// silence, the word, then silence for end_silence to end it.
	dir := t.TempDir()
	var accounts strings.Builder
	for i, tr := range tries {
		wav := filepath.Join(dir, fmt.Sprintf("say%d.wav", i))
		sayWAV(t, espeak, tr, wav)
		fmt.Fprintf(&accounts, "<sip:%s@127.0.0.1>;regint=0;answermode=auto;audio_codecs=PCMU;audio_source=aufile,%s\n", number(i), wav)
	}
	addr := testtool.BaresipAddr(t)
	writeFile(t, filepath.Join(dir, "baresip", "accounts"), accounts.String())
	writeFile(t, filepath.Join(dir, "baresip", "config"), "sip_listen "+addr+"\n"+
		"audio_player aubridge,nowhere\naudio_source aufile,"+filepath.Join(dir, "say0.wav")+"\n"+
		"statmode_default off\nmodule_path /usr/lib/baresip/modules\n"+
		"module g711.so\nmodule aubridge.so\nmodule aufile.so\nmodule_tmp account.so\nmodule_app menu.so\n")
	var out testtool.LockedBuffer
	cmd := exec.Command(baresip, "-f", "baresip", "-t", "600")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("baresip's output:\n%s", out.String())
		}
	})
	testtool.WaitFor(t, "baresip ready", 30*time.Second, func() bool { return strings.Contains(out.String(), "baresip is ready.") })

	cfg := config.DefaultConfig()
	cfg.SIP.Listen, cfg.SIP.RTPPorts = "127.0.0.1:0", ""
	cfg.SIP.Trunks = []config.SIPTrunk{{Name: "phone", Address: addr, Transport: "udp", MaxChannels: 1, MaxCPS: 10}}
	cfg.ASR = config.ASRConfig{Engine: config.ASRCommand, Command: wrapper + " {wav} {hints}", SampleRate: 16000,
		Timeout: config.Duration{Duration: 30 * time.Second}}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "registered"}, []string{"trunk"})
	d, err := NewSIP(cfg, dir, slog.New(slog.DiscardHandler), gauge)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	// The scenario: a speech gather whose branches are the two words
	// (its hints default to them), each setting its result.
	var s script.Script
	if err := json.Unmarshal([]byte(`{"steps":[
		{"name":"ask","gather":{"input":["speech"],"timeout":"10s","end_silence":"700ms","max_speech":"5s",
			"branches":{"yes":"said_yes","no":"said_no"},"no_input":"silent","no_match":"unclear"}},
		{"name":"said_yes","set":{"label":"yes"}},
		{"name":"said_no","set":{"label":"no"}},
		{"name":"silent","set":{"label":"no_input"}},
		{"name":"unclear","set":{"label":"no_match"}}]}`), &s); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	right := 0
	for i, tr := range tries {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		res := d.Dial(ctx, domain.DialRequest{From: "dialbox", To: number(i), Trunk: "phone", Start: time.Now(), Script: &s})
		cancel()
		if res.AnsweredAt == nil || res.Script == nil || res.Script.End != script.EndHangup || len(res.Script.Steps) != 2 {
			t.Fatalf("try %d (%+v): %+v, script %+v", i, tr, res, res.Script)
		}
		heard := res.Script.Steps[0].Speech
		if res.Script.Result == tr.word && heard != nil && *heard == tr.word {
			right++
		} else {
			t.Logf("try %d: %+v heard as %q: result %q", i, tr, deref(heard), res.Script.Result)
		}
	}
	t.Logf("pocketsphinx heard %d of %d words right over real calls (%.0f%%)", right, n, 100*float64(right)/float64(n))
	if n <= 2 && right != n || float64(right) < 0.95*float64(n) {
		t.Errorf("%d of %d right", right, n)
	}
}

func deref(s *string) string {
	if s == nil {
		return "(no speech step)"
	}
	return *s
}

// number is the callee of try i.
func number(i int) string { return fmt.Sprintf("+8490000%04d", i) }

// sayWAV writes what tr says as an 8 kHz WAV for baresip to send: a second
// of silence, the word, three seconds of silence.
func sayWAV(t *testing.T, espeak string, tr spoken, path string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.Command(espeak, "--stdout", "-v", tr.voice, "-s", strconv.Itoa(tr.speed), "--", tr.word)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("espeak-ng %+v: %v", tr, err)
	}
	b, err := audio.DecodeWAV(&out)
	if err == nil {
		b, err = audio.ResampleBuffer(b, audio.PhoneRate)
	}
	if err != nil {
		t.Fatal(err)
	}
	samples := append(make([]int16, audio.PhoneRate), b.Samples...)
	samples = append(samples, make([]int16, 3*audio.PhoneRate)...)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := audio.EncodeWAV(f, audio.Buffer{Rate: audio.PhoneRate, Samples: samples}); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
