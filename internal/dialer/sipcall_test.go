package dialer

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emiago/diago"
	"github.com/prometheus/client_golang/prometheus"

	"dialbox/internal/audio"
	"dialbox/internal/config"
	"dialbox/internal/script"
	"dialbox/internal/sipcall"
	"dialbox/internal/sipcall/sipcalltest"
	"dialbox/internal/testtool"
)

// heardByServer is what the fake recognizer received of one utterance.
type heardByServer struct {
	fields map[string]string
	length time.Duration
}

// fakeTranscriber is a server of the /v1/audio/transcriptions protocol
// answering text for every utterance, telling the test what it got.
func fakeTranscriber(t *testing.T, text string) (*httptest.Server, <-chan heardByServer) {
	got := make(chan heardByServer, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseMultipartForm(4 << 20); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		h := heardByServer{fields: map[string]string{}}
		for k, v := range r.MultipartForm.Value {
			h.fields[k] = v[0]
		}
		f, _, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		b, err := audio.DecodeWAV(f)
		if err != nil || b.Rate != 8000 {
			http.Error(w, "not an 8 kHz WAV", 400)
			return
		}
		h.length = b.Duration()
		got <- h
		json.NewEncoder(w).Encode(map[string]string{"text": text})
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// newListeningDialer is a SIP dialer calling fe, hearing through the
// "openai" engine at asrURL ("" for no [asr] engine), with a 200 ms
// prompt "ask.wav".
func newListeningDialer(t *testing.T, fe *sipcalltest.FarEnd, asrURL string) *SIP {
	dir := t.TempDir()
	cfg := config.DefaultConfig()
	cfg.SIP.Listen, cfg.SIP.RTPPorts = "127.0.0.1:0", ""
	cfg.SIP.Trunks = []config.SIPTrunk{{Name: "main", Address: fe.Address("udp"), Transport: "udp", MaxChannels: 10, MaxCPS: 10}}
	if asrURL != "" {
		cfg.ASR.Engine, cfg.ASR.URL, cfg.ASR.Model = config.ASROpenAI, asrURL, "whisper-1"
	}
	prompt, err := os.Create(filepath.Join(dir, "ask.wav"))
	if err != nil {
		t.Fatal(err)
	}
	pcm, _ := audio.DecodePCM16(sipcalltest.Tone(200))
	if err := audio.EncodeWAV(prompt, audio.Buffer{Rate: 8000, Samples: pcm}); err != nil {
		t.Fatal(err)
	}
	prompt.Close()
	cfg.Voicebot.PromptsDir = dir
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "registered"}, []string{"trunk"})
	d, err := NewSIP(cfg, dir, slog.New(slog.DiscardHandler), gauge)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// listenOnCall calls a far end that answers, sends callee's audio (then
// silence) and the keys, and runs Listen with o on the answered call.
func listenOnCall(t *testing.T, asrURL string, callee []byte, o script.ListenOptions, keys ...rune) (script.Heard, error) {
	fe := sipcalltest.NewFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Answer()
		go sipcalltest.SendAudio(d, callee)
		for _, k := range keys {
			if err := sipcalltest.SendDTMF(d.RTPPacketWriter, k); err != nil {
				t.Error(err)
			}
		}
		sipcalltest.Listen(t, d, nil)
	})
	d := newListeningDialer(t, fe, asrURL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var heard script.Heard
	var err error
	r := d.ua.Call(ctx, sipcall.CallRequest{Trunk: "main", To: "+84901234567", Caller: "dialbox",
		Talk: func(ctx context.Context, l *sipcall.Line) error {
			c := &sipScriptCall{d: d, line: l, fields: map[string]string{}}
			heard, err = c.Listen(ctx, o)
			return nil
		}})
	if !r.Answered {
		t.Fatalf("call not answered: %+v", r)
	}
	return heard, err
}

// TestListenOverSIP: the callee answers a spoken "yes" after the prompt;
// the recognizer gets the utterance, from just before the voice to the end
// of end_silence, with the hints and the language, and its text is what
// Listen heard.
func TestListenOverSIP(t *testing.T) {
	t.Parallel()
	srv, got := fakeTranscriber(t, "Yes.")
	o := script.ListenOptions{Prompt: script.Prompt{Play: "ask.wav"}, Hints: []string{"yes", "no"},
		Timeout: 5 * time.Second, EndSilence: 700 * time.Millisecond, MaxSpeech: 5 * time.Second}
	heard, err := listenOnCall(t, srv.URL, sipcalltest.Words(800, 600), o)
	if err != nil || heard != (script.Heard{Text: "Yes."}) {
		t.Fatalf("heard %+v, %v", heard, err)
	}
	h := <-got
	// 200 ms before the voice, 600 ms of it, then end_silence.
	if want := 1500 * time.Millisecond; h.length < want-20*time.Millisecond || h.length > want+20*time.Millisecond {
		t.Errorf("the recognizer got %v of audio, want %v (±20 ms)", h.length, want)
	}
	if h.fields["prompt"] != "yes, no" || h.fields["language"] != "vi" || h.fields["model"] != "whisper-1" {
		t.Errorf("fields %v", h.fields)
	}
}

// TestListenSilenceAndKeys: silence is Heard{} and nothing goes to the
// recognizer; keys pressed instead are read as Gather reads them.
func TestListenSilenceAndKeys(t *testing.T) {
	t.Parallel()
	srv, got := fakeTranscriber(t, "never")
	heard, err := listenOnCall(t, srv.URL, nil, script.ListenOptions{Timeout: 500 * time.Millisecond})
	if err != nil || heard != (script.Heard{}) {
		t.Errorf("silence: heard %+v, %v", heard, err)
	}
	heard, err = listenOnCall(t, srv.URL, nil, script.ListenOptions{Timeout: 3 * time.Second, Keys: true, MaxDigits: 4, FinishOnKey: '#'},
		'1', '2', '#')
	if err != nil || heard != (script.Heard{Keys: "12#"}) {
		t.Errorf("keys: heard %+v, %v", heard, err)
	}
	select {
	case h := <-got:
		t.Errorf("the recognizer was asked: %+v", h)
	default:
	}
}

// TestListenWithoutARecognizer: a listening step on a dialer with no
// [asr] engine fails, saying what to set.
func TestListenWithoutARecognizer(t *testing.T) {
	t.Parallel()
	_, err := listenOnCall(t, "", sipcalltest.Words(100, 300), script.ListenOptions{Timeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "[asr] engine") {
		t.Errorf("error %v", err)
	}
}

// TestListenHearsEspeak: the far end says an espeak-ng "có" after a pause;
// the recognizer gets all of it: at least the word's voice, at most the
// whole rendering, with the pre-roll and end_silence around it.
func TestListenHearsEspeak(t *testing.T) {
	t.Parallel()
	espeak := testtool.Require(t, "espeak-ng", "espeak-ng")
	out, err := exec.Command(espeak, "--stdout", "-v", "vi", "--", "có").Output()
	if err != nil {
		t.Fatal(err)
	}
	b, err := audio.DecodeWAV(bytes.NewReader(out))
	if err == nil {
		b, err = audio.ResampleBuffer(b, audio.PhoneRate)
	}
	if err != nil {
		t.Fatal(err)
	}
	callee := append(make([]byte, 2*audio.PhoneRate), audio.EncodePCM16(b.Samples)...) // a second's pause
	srv, got := fakeTranscriber(t, "có")
	end := 500 * time.Millisecond
	heard, err := listenOnCall(t, srv.URL, callee, script.ListenOptions{Hints: []string{"có", "không"},
		Timeout: 5 * time.Second, EndSilence: end, MaxSpeech: 5 * time.Second})
	if err != nil || heard.Text != "có" {
		t.Fatalf("heard %+v, %v", heard, err)
	}
	h := <-got
	if least, most := 200*time.Millisecond+100*time.Millisecond+end, 200*time.Millisecond+b.Duration()+end+20*time.Millisecond; h.length < least || h.length > most {
		t.Errorf("the recognizer got %v of audio, want %v to %v", h.length, least, most)
	}
}
