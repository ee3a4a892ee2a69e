package config

import (
	"net/url"
	"strings"
	"time"
)

// LLMConfig is [llm]: the OpenAI-compatible chat completions endpoint that
// scripts' agent steps talk through (docs/voicebot.md#conversations-the-agent-step).
type LLMConfig struct {
	// URL is the API's base, such as http://127.0.0.1:8080/v1, to which
	// /chat/completions is added; empty: agent steps cannot run.
	URL   string `toml:"url"`
	Model string `toml:"model"`
	// Timeout bounds one reply, from the request to its stream's end.
	Timeout Duration `toml:"timeout"`
	// APIKey, the bearer token, comes from DIALBOX_LLM_API_KEY only: a
	// secret kept out of config files.
	APIKey string `toml:"-"`
}

// llmKeyEnv is where the endpoint's key is read.
const llmKeyEnv = "DIALBOX_LLM_API_KEY"

// applyLLMEnv reads the endpoint's key.
func applyLLMEnv(c *LLMConfig, env []string) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, llmKeyEnv+"="); ok {
			c.APIKey = v
		}
	}
}

// Bounds of llm.timeout.
const (
	minLLMTimeout = time.Second
	maxLLMTimeout = 5 * time.Minute
)

func (c *Config) checkLLM() error {
	l := c.LLM
	if l.URL != "" {
		u, err := url.Parse(l.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return badKey("llm.url", "must be an http:// or https:// base URL such as \"http://127.0.0.1:8080/v1\" (/chat/completions is added)")
		}
	}
	if d := l.Timeout.Duration; d < minLLMTimeout || d > maxLLMTimeout {
		return badKey("llm.timeout", "must be from "+minLLMTimeout.String()+" to "+maxLLMTimeout.String())
	}
	return nil
}
