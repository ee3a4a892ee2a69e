package tts

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A speech server of the /v1/audio/speech protocol: the JSON fields are
// checked, the 24 kHz WAV it answers comes back at the phone rate, and the
// cache asks it once per text.
func TestOpenAIEngine(t *testing.T) {
	wav := wavBytes(t, toneBuffer(24000, 1.0))
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var got map[string]string
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		want := map[string]string{"model": "tts-vi", "voice": "banmai", "input": "Xin chào anh An", "response_format": "wav"}
		for k, v := range want {
			if got[k] != v {
				http.Error(w, "field "+k+" = "+got[k], 400)
				return
			}
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/audio/speech" || r.Header.Get("Authorization") != "Bearer k1" ||
			r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request", 400)
			return
		}
		w.Write(wav)
	}))
	defer srv.Close()
	e, err := NewOpenAI(srv.URL+"/v1/audio/speech", "tts-vi", "k1", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(e.Name(), "k1") {
		t.Errorf("Name shows the key: %s", e.Name())
	}
	c, err := NewCache(t.TempDir(), e, CacheLimits{})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		b, err := c.Synthesize(context.Background(), "Xin chào anh An", "banmai")
		if err != nil {
			t.Fatal(err)
		}
		expectPhoneAudio(t, b, 990*time.Millisecond, 1010*time.Millisecond)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server was asked %d times; the cache should have answered the second", n)
	}
}

func TestOpenAIEngineErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fail":
			http.Error(w, `{"error": "unknown voice"}`, 422)
		case "/mp3":
			w.Write([]byte("ID3\x04 not a wav"))
		}
	}))
	defer srv.Close()
	for path, want := range map[string]string{
		"/fail": `422 Unprocessable Entity: {"error": "unknown voice"}`,
		"/mp3":  "not usable audio",
	} {
		e, err := NewOpenAI(srv.URL+path, "m", "", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Synthesize(context.Background(), "secret text", "v")
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "secret text") {
			t.Errorf("%s: error %v, want one with %q and without the text", path, err, want)
		}
	}
	if _, err := NewOpenAI("localhost:8000/v1/audio/speech", "m", "", 0); err == nil {
		t.Error("a URL without a scheme accepted")
	}
}
