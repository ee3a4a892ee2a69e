package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func load(t *testing.T, toml string, env []string) (Config, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dialbox.toml")
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	return LoadConfig(path, env)
}

// TestASRConfigErrorsNameTheKey: a bad [asr] (or the openai TTS engine's
// URL) stops the start with the key named.
func TestASRConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct{ config, key string }{
		{"[asr]\nengine = \"vosk\"\n", "asr.engine"},
		{"[asr]\nengine = \"openai\"\n", "asr.url"},
		{"[asr]\nengine = \"openai\"\nurl = \"127.0.0.1:8081/inference\"\n", "asr.url"},
		{"[asr]\nengine = \"command\"\n", "asr.command"},
		{"[asr]\nengine = \"command\"\ncommand = \"recognize --in={wav}\"\n", "asr.command"},
		{"[asr]\nengine = \"command\"\ncommand = \"recognize {wav}\"\nsample_rate = 4000\n", "asr.sample_rate"},
		{"[asr]\ntimeout = \"0s\"\n", "asr.timeout"},
		{"[tts]\nengine = \"openai\"\n", "tts.url"},
		{"[tts]\nengine = \"piper\"\n", "tts.engine"},
	} {
		_, err := load(t, tc.config, nil)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != tc.key {
			t.Errorf("%q: %v, want an error naming %s", tc.config, err, tc.key)
		}
	}
}

// TestEngineKeysFromTheEnvironmentOnly: the keys come from
// DIALBOX_ASR_API_KEY and DIALBOX_TTS_API_KEY, never the file, and are
// never printed.
func TestEngineKeysFromTheEnvironmentOnly(t *testing.T) {
	c, err := load(t, "[asr]\nengine = \"openai\"\nurl = \"http://127.0.0.1:8081/inference\"\n"+
		"[tts]\nengine = \"openai\"\nurl = \"http://127.0.0.1:8000/v1/audio/speech\"\nmodel = \"m\"\n",
		[]string{"DIALBOX_ASR_API_KEY=asr-key-1", "DIALBOX_TTS_API_KEY=tts-key-2"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ASR.APIKey != "asr-key-1" || c.TTS.APIKey != "tts-key-2" {
		t.Errorf("keys %q %q", string(c.ASR.APIKey), string(c.TTS.APIKey))
	}
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", c, c, c, c.ASR.APIKey)} {
		if strings.Contains(s, "asr-key-1") || strings.Contains(s, "tts-key-2") {
			t.Errorf("a key printed: %s", s)
		}
	}
	if _, err := load(t, "[asr]\napi_key = \"x\"\n", nil); err == nil {
		t.Error("a key in the file accepted")
	}
	if r, err := c.Recognizer(); err != nil || r == nil {
		t.Errorf("Recognizer: %v, %v", r, err)
	}
	def := DefaultConfig()
	if r, err := def.Recognizer(); err != nil || r != nil {
		t.Errorf("the default config has a recognizer: %v, %v", r, err)
	}
}
