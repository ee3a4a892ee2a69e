package asr

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dialbox/internal/audio"
)

// speech is ms milliseconds of a voiced-looking 8 kHz signal.
func speech(ms int) audio.Buffer {
	b := audio.Buffer{Rate: audio.PhoneRate, Samples: make([]int16, 8*ms)}
	for i := range b.Samples {
		b.Samples[i] = int16(6000 * math.Sin(2*math.Pi*220*float64(i)/8000))
	}
	return b
}

func TestOpenAISendsTheForm(t *testing.T) {
	type form struct {
		fields map[string]string
		wav    audio.Buffer
		auth   string
		ctype  string
	}
	got := make(chan form, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/transcriptions" {
			http.Error(w, "wrong route "+r.Method+" "+r.URL.Path, 404)
			return
		}
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		f := form{fields: map[string]string{}, auth: r.Header.Get("Authorization")}
		for k, v := range r.MultipartForm.Value {
			f.fields[k] = v[0]
		}
		file, hdr, err := r.FormFile("file")
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		f.ctype = hdr.Filename
		if f.wav, err = audio.DecodeWAV(file); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		got <- f
		json.NewEncoder(w).Encode(map[string]string{"text": " Có,\n tôi xác nhận "})
	}))
	defer srv.Close()
	e, err := NewOpenAI(OpenAIOptions{URL: srv.URL + "/v1/audio/transcriptions", Model: "whisper-1", Language: "vi",
		Key: "sk-test", Rate: 16000})
	if err != nil {
		t.Fatal(err)
	}
	text, err := e.Recognize(context.Background(), speech(700), []string{"có", "không\nphải", "có", "  "})
	if err != nil {
		t.Fatal(err)
	}
	if text != "Có, tôi xác nhận" {
		t.Errorf("text %q", text)
	}
	f := <-got
	want := map[string]string{"model": "whisper-1", "language": "vi", "prompt": "có, không phải", "response_format": "json"}
	for k, v := range want {
		if f.fields[k] != v {
			t.Errorf("field %s = %q, want %q", k, f.fields[k], v)
		}
	}
	if f.auth != "Bearer sk-test" {
		t.Errorf("Authorization %q", f.auth)
	}
	if f.ctype != "utterance.wav" {
		t.Errorf("file name %q", f.ctype)
	}
	if f.wav.Rate != 16000 || f.wav.Duration() != 700*time.Millisecond {
		t.Errorf("WAV at %d Hz, %v long; want 16000 Hz, 700ms", f.wav.Rate, f.wav.Duration())
	}
	if strings.Contains(e.Name(), "sk-test") {
		t.Errorf("Name shows the key: %s", e.Name())
	}
}

func TestOpenAIErrors(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			http.Error(w, "model not loaded", 503)
		case "/notjson":
			io.WriteString(w, "<html>hello</html>")
		case "/notext":
			io.WriteString(w, `{"error": "x"}`)
		case "/huge":
			io.WriteString(w, `{"text": "`+strings.Repeat("a", maxAnswer)+`"}`)
		case "/slow":
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(block) // before srv.Close, which waits for the handler
	for path, want := range map[string]string{
		"/fail":    "503 Service Unavailable: model not loaded",
		"/notjson": `not {"text": ...}: <html>hello</html>`,
		"/notext":  `not {"text": ...}`,
		"/huge":    "answer larger than",
		"/slow":    "no answer within 50ms",
	} {
		e, err := NewOpenAI(OpenAIOptions{URL: srv.URL + path, Rate: 8000, Timeout: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Recognize(context.Background(), speech(100), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one with %q", path, err, want)
		}
	}
	for _, o := range []OpenAIOptions{{URL: "ftp://x/y", Rate: 8000}, {URL: "/v1/audio/transcriptions", Rate: 8000}, {URL: "http://x/", Rate: 4000}} {
		if _, err := NewOpenAI(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestCommandGetsFilesNeverOptions: the program gets the WAV and the hints
// as files, whatever the hints hold, and its output is one line.
func TestCommandGetsFilesNeverOptions(t *testing.T) {
	dir := t.TempDir()
	// The script copies what it was given where the test can read it.
	script := `cp "$1" "` + dir + `/got.wav" && cp "$2" "` + dir + `/got.hints" && printf '  yes\n\n please  \n'`
	c, err := NewCommand([]string{"sh", "-c", script, "sh", "{wav}", "{hints}"}, 8000, 0)
	if err != nil {
		t.Fatal(err)
	}
	hostile := []string{"yes", "$(touch " + dir + "/pwned)", "-rf /", "two\nlines"}
	text, err := c.Recognize(context.Background(), speech(300), hostile)
	if err != nil {
		t.Fatal(err)
	}
	if text != "yes please" {
		t.Errorf("text %q", text)
	}
	hints, _ := os.ReadFile(filepath.Join(dir, "got.hints"))
	if want := "yes\n$(touch " + dir + "/pwned)\n-rf /\ntwo lines\n"; string(hints) != want {
		t.Errorf("hints file %q, want %q", hints, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a hint ran as a command")
	}
	f, err := os.Open(filepath.Join(dir, "got.wav"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := audio.DecodeWAV(f)
	if err != nil || b.Rate != 8000 || b.Duration() != 300*time.Millisecond {
		t.Errorf("WAV %d Hz %v, %v; want 8000 Hz 300ms", b.Rate, b.Duration(), err)
	}
}

func TestCommandRefusals(t *testing.T) {
	for _, argv := range [][]string{
		nil,
		{""},
		{"{wav}"},
		{"prog", "--file={wav}"},
		{"prog", "{hints}"},
		{"prog", "x{hints}", "{wav}"},
	} {
		if _, err := NewCommand(argv, 8000, 0); err == nil {
			t.Errorf("%q accepted", argv)
		}
	}
	if _, err := NewCommand([]string{"prog", "{wav}"}, 100, 0); err == nil {
		t.Error("a 100 Hz rate accepted")
	}
}

func TestCommandErrors(t *testing.T) {
	// Only the case that tests the timeout has a short one: on a loaded
	// machine the others can take longer than 100 ms to start a shell.
	for _, tc := range []struct {
		script, want string
		timeout      time.Duration
	}{
		{"echo broken model >&2; exit 3", "exit status 3: broken model", time.Minute},
		{"sleep 30", "no transcript within 100ms", 100 * time.Millisecond},
		{"yes", "wrote more than", time.Minute},
	} {
		c, err := NewCommand([]string{"sh", "-c", tc.script, "sh", "{wav}"}, 8000, tc.timeout)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Recognize(context.Background(), speech(100), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one with %q", tc.script, err, tc.want)
		}
	}
}

func TestCleanHintsBounds(t *testing.T) {
	var many []string
	for i := range MaxHints + 10 {
		many = append(many, strings.Repeat("x", i%3+1)+string(rune('a'+i%26))+strings.Repeat("y", i))
	}
	got := cleanHints(many)
	if len(got) != MaxHints {
		t.Errorf("%d hints kept, want %d", len(got), MaxHints)
	}
	for _, h := range got {
		if len(h) > MaxHintBytes {
			t.Errorf("a hint of %d bytes kept", len(h))
		}
	}
}
