package tts

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"dialbox/internal/audio"
)

func wavBytes(t *testing.T, b audio.Buffer) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := audio.EncodeWAV(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// An OpenTTS-like service: GET /api/tts?voice=&text= answers a 16 kHz WAV.
func TestHTTPEngine(t *testing.T) {
	wav := wavBytes(t, toneBuffer(16000, 1.5))
	text := "Xin chào anh An & chị Bình: 100% = 1+1? #không /path"
	var gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath = r.URL.EscapedPath()
		q := r.URL.Query()
		if r.Method != http.MethodGet || q.Get("text") != text || q.Get("voice") != "vi+f1" || len(q) != 2 {
			http.Error(w, "bad request "+r.URL.RawQuery, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "audio/wav")
		w.Write(wav)
	}))
	defer srv.Close()

	e, err := NewHTTP(srv.URL+"/api/tts?voice={voice}&text={text}", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Synthesize(context.Background(), text, "vi+f1")
	if err != nil {
		t.Fatal(err)
	}
	expectPhoneAudio(t, b, 1490*time.Millisecond, 1510*time.Millisecond)

	// In the path, a space must be %20 (a "+" there is a plus sign) and a
	// slash must not start a new segment.
	e, _ = NewHTTP(srv.URL+"/say/{voice}/{text}?voice={voice}&text={text}", time.Second)
	if _, err := e.Synthesize(context.Background(), text, "vi+f1"); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(gotPath, "/say/vi%2Bf1/Xin%20ch%C3%A0o%20anh%20An%20%26") || !strings.Contains(gotPath, "%2Fpath") {
		t.Errorf("path %s: text not escaped for a path", gotPath)
	}
}

func TestHTTPEngineErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`{"error":"voice vi not loaded"}`))
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	})
	mux.HandleFunc("/html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<html><body>Welcome to the TTS portal</body></html>"))
	})
	mux.HandleFunc("/mp3", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/wav")
		b := wavBytes(t, toneBuffer(8000, 0.1))
		b[20] = 0x55 // the fmt tag: MPEG layer 3
		w.Write(b)
	})
	mux.HandleFunc("/cut", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/wav")
		w.Write(wavBytes(t, toneBuffer(8000, 0.5))[:1000])
	})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; the client gives up
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	for _, c := range []struct{ path, says string }{
		{"/500", `500 Internal Server Error: {"error":"voice vi not loaded"}`},
		{"/nowhere", "404 Not Found: 404 page not found"},
		{"/empty", "(empty body)"},
		{"/html", `answer of type "text/html" is not usable audio`},
		{"/mp3", "format tag 0x0055 (MPEG layer 3)"},
		{"/cut", "truncated WAV file"},
		{"/hang", "no answer within 50ms"},
	} {
		t.Run(c.path, func(t *testing.T) {
			e, err := NewHTTP(srv.URL+c.path+"?key=secret&text={text}", 50*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Synthesize(context.Background(), "xin chào", "vi")
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error %v, want one saying %q", err, c.says)
			}
			t.Log(err)
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "ch%C3%A0o") {
				t.Errorf("error %v gives away the query", err)
			}
		})
	}

	srv.Close()
	e, _ := NewHTTP(srv.URL+"/?text={text}", time.Second)
	if _, err := e.Synthesize(context.Background(), "x", "vi"); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("server down: error %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Synthesize(ctx, "x", "vi"); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: error %v", err)
	}
}

func TestNewHTTPValidates(t *testing.T) {
	for _, u := range []string{
		"", "tts:5500/api/tts", "/api/tts?text={text}", "ftp://tts/{text}", "http://",
		"http://{text}.example/", "http://tts-{voice}:5500/?text={text}", "http://user:{text}@tts/", "http://tts:{voice}/",
		"http://tts/%zz?text={text}",
	} {
		if _, err := NewHTTP(u, 0); err == nil {
			t.Errorf("NewHTTP(%q) accepted", u)
		}
	}
	for _, u := range []string{
		"http://127.0.0.1:5500/api/tts?voice={voice}&text={text}",
		"HTTPS://tts.example/process?INPUT_TEXT={text}&LOCALE={voice}&INPUT_TYPE=TEXT&OUTPUT_TYPE=AUDIO&AUDIO=WAVE_FILE",
		"http://[::1]:59125/{voice}/{text}.wav",
	} {
		if _, err := NewHTTP(u, 0); err != nil {
			t.Errorf("NewHTTP(%q): %v", u, err)
		}
	}
}
