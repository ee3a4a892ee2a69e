package tts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"dialbox/internal/audio"
)

// OpenAI speaks through a server speaking the /v1/audio/speech protocol:
// a JSON POST of model, voice and input, the audio back. Local speech
// servers speak it, so one on-premises server can give natural Vietnamese
// speech beside the recognizer (docs/voicebot.md#recognizers).
type OpenAI struct {
	url, model, key string
	timeout         time.Duration
	client          *http.Client
}

// NewOpenAI returns an engine posting to endpoint (the whole URL, such as
// http://127.0.0.1:8000/v1/audio/speech) with model; key, when set, goes as
// a Bearer token. A request taking longer than timeout
// (DefaultHTTPTimeout if zero) fails.
func NewOpenAI(endpoint, model, key string, timeout time.Duration) (*OpenAI, error) {
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("tts openai: url %q is not an absolute http or https URL", endpoint)
	}
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	return &OpenAI{url: endpoint, model: model, key: key, timeout: timeout, client: &http.Client{}}, nil
}

// Name is "openai", the URL and the model (never the key): another model
// speaks the same text differently, so the cache keeps them apart.
func (o *OpenAI) Name() string { return "openai " + o.url + " " + o.model }

// Synthesize asks for text in voice as a WAV (response_format "wav"). A
// non-2xx status or an answer that is not a WAV is an error quoting the
// start of the answer; errors never show the text.
func (o *OpenAI) Synthesize(ctx context.Context, text, voice string) (audio.Buffer, error) {
	body, err := json.Marshal(map[string]string{"model": o.model, "voice": voice, "input": text, "response_format": "wav"})
	if err != nil {
		return audio.Buffer{}, fmt.Errorf("tts openai: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url, bytes.NewReader(body))
	if err != nil {
		return audio.Buffer{}, fmt.Errorf("tts openai: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "audio/wav")
	if o.key != "" {
		req.Header.Set("Authorization", "Bearer "+o.key)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return audio.Buffer{}, fmt.Errorf("tts openai: POST %s: no answer within %v: %w", o.url, o.timeout, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL
		}
		return audio.Buffer{}, fmt.Errorf("tts openai: POST %s: %w", o.url, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxWAV+1))
	if err != nil {
		return audio.Buffer{}, fmt.Errorf("tts openai: POST %s: reading the answer: %w", o.url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return audio.Buffer{}, fmt.Errorf("tts openai: POST %s: %s: %s", o.url, resp.Status, excerpt(answer))
	}
	if len(answer) > MaxWAV {
		return audio.Buffer{}, fmt.Errorf("tts openai: POST %s: answer larger than %d bytes", o.url, MaxWAV)
	}
	b, err := phoneAudio(answer)
	if err != nil {
		err = fmt.Errorf("tts openai: POST %s: the answer is not usable audio: %w", o.url, err)
		if !bytes.HasPrefix(answer, []byte("RIFF")) {
			err = fmt.Errorf("%w: %s", err, excerpt(answer))
		}
		return audio.Buffer{}, err
	}
	return b, nil
}
