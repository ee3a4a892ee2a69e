package config

import (
	"fmt"
	"strings"

	"dialbox/internal/asr"
)

// ASR engines (asr.engine); empty: none, no script may listen.
const (
	ASROpenAI  = "openai"
	ASRCommand = "command"
)

// ASRConfig is [asr]: the recognizer a listening script's utterances go to
// on real calls (docs/voicebot.md#recognizers).
type ASRConfig struct {
	// Engine is "openai", "command" or empty (none).
	Engine string `toml:"engine"`
	// URL is the "openai" engine's /v1/audio/transcriptions endpoint.
	URL   string `toml:"url"`
	Model string `toml:"model"`
	// Language is sent to the "openai" engine; empty lets it guess.
	Language string `toml:"language"`
	// Command is the "command" engine's argv, split at spaces, with the
	// whole arguments {wav} and {hints}.
	Command string `toml:"command"`
	// SampleRate is the WAV's rate: the call's 8000, or what a recognizer
	// wants (whisper.cpp's server: 16000).
	SampleRate int      `toml:"sample_rate"`
	Timeout    Duration `toml:"timeout"`
	// APIKey is the "openai" engine's key, from DIALBOX_ASR_API_KEY only.
	APIKey Secret `toml:"-"`
}

// Secret is a key read from the environment: never in the config file
// (no toml key), never printed.
type Secret string

func (Secret) String() string   { return "(secret)" }
func (Secret) GoString() string { return "(secret)" }

// Format keeps every verb from printing the key.
func (s Secret) Format(f fmt.State, _ rune) { fmt.Fprint(f, s.String()) }

// applyKeyEnv sets the engines' keys from DIALBOX_ASR_API_KEY and
// DIALBOX_TTS_API_KEY.
func applyKeyEnv(cfg *Config, env []string) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "DIALBOX_ASR_API_KEY="); ok {
			cfg.ASR.APIKey = Secret(v)
		}
		if v, ok := strings.CutPrefix(kv, "DIALBOX_TTS_API_KEY="); ok {
			cfg.TTS.APIKey = Secret(v)
		}
	}
}

func (c *Config) checkASR() error {
	if c.ASR.Timeout.Duration <= 0 {
		return badKey("asr.timeout", "must be positive")
	}
	switch c.ASR.Engine {
	case "":
	case ASROpenAI, ASRCommand:
		if _, err := c.Recognizer(); err != nil {
			key := "asr.url"
			if c.ASR.Engine == ASRCommand {
				key = "asr.command"
			}
			if strings.Contains(err.Error(), "sample rate") {
				key = "asr.sample_rate"
			}
			return badKeyf(key, "%v", err)
		}
	default:
		return badKey("asr.engine", `must be "openai", "command" or "" (none)`)
	}
	return nil
}

// Recognizer builds the configured engine; nil when there is none.
func (c *Config) Recognizer() (asr.Recognizer, error) {
	a := c.ASR
	switch a.Engine {
	case ASROpenAI:
		e, err := asr.NewOpenAI(asr.OpenAIOptions{URL: a.URL, Model: a.Model, Language: a.Language, Key: string(a.APIKey),
			Rate: a.SampleRate, Timeout: a.Timeout.Duration})
		if err != nil {
			return nil, err
		}
		return e, nil
	case ASRCommand:
		e, err := asr.NewCommand(strings.Fields(a.Command), a.SampleRate, a.Timeout.Duration)
		if err != nil {
			return nil, err
		}
		return e, nil
	}
	return nil, nil
}
