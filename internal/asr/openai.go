package asr

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"dialbox/internal/audio"
)

// OpenAI hears through a speech server speaking the /v1/audio/transcriptions
// protocol: whisper.cpp's server, faster-whisper's and most local ones.
type OpenAI struct {
	url, model, language, key string
	rate                      int
	timeout                   time.Duration
	client                    *http.Client
}

// OpenAIOptions configure an OpenAI engine.
type OpenAIOptions struct {
	// URL is the endpoint itself, such as
	// http://127.0.0.1:8080/v1/audio/transcriptions (or whisper.cpp's
	// /inference, which takes the same form).
	URL      string
	Model    string
	Language string // ISO 639-1, "vi"; empty lets the server guess
	Key      string // sent as a Bearer token when set
	Rate     int    // the WAV's sample rate
	Timeout  time.Duration
}

// maxAnswer bounds the JSON a server may answer.
const maxAnswer = 1 << 20

// NewOpenAI checks o and returns the engine.
func NewOpenAI(o OpenAIOptions) (*OpenAI, error) {
	u, err := url.Parse(o.URL)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("asr openai: url %q is not an absolute http or https URL", o.URL)
	}
	if err := checkRate(o.Rate); err != nil {
		return nil, fmt.Errorf("asr openai: %w", err)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return &OpenAI{url: o.URL, model: o.Model, language: o.Language, key: o.Key, rate: o.Rate,
		timeout: o.Timeout, client: &http.Client{}}, nil
}

// Name is "openai", the URL and the model; never the key.
func (e *OpenAI) Name() string { return "openai " + e.url + " " + e.model }

// Recognize posts speech as a multipart form: file (the WAV), model,
// language, prompt (the hints, comma-separated: how whisper takes a
// vocabulary) and response_format json; the answer's "text" is the
// transcript.
func (e *OpenAI) Recognize(ctx context.Context, speech audio.Buffer, hints []string) (string, error) {
	w, err := wav(speech, e.rate)
	if err != nil {
		return "", fmt.Errorf("asr openai: %w", err)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", "utterance.wav")
	if err == nil {
		_, err = fw.Write(w)
	}
	fields := [][2]string{{"model", e.model}, {"language", e.language}, {"response_format", "json"}}
	if h := cleanHints(hints); len(h) > 0 {
		fields = append(fields, [2]string{"prompt", strings.Join(h, ", ")})
	}
	for _, f := range fields {
		if err == nil && f[1] != "" {
			err = mw.WriteField(f[0], f[1])
		}
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		return "", fmt.Errorf("asr openai: %w", err)
	}

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, &body)
	if err != nil {
		return "", fmt.Errorf("asr openai: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	if e.key != "" {
		req.Header.Set("Authorization", "Bearer "+e.key)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		switch {
		case parent.Err() != nil: // the call ended
			return "", context.Cause(parent)
		case ctx.Err() != nil:
			return "", fmt.Errorf("asr openai: POST %s: no answer within %v", e.url, e.timeout)
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the URL
		}
		return "", fmt.Errorf("asr openai: POST %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return "", fmt.Errorf("asr openai: POST %s: reading the answer: %w", e.url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("asr openai: POST %s: %s: %s", e.url, resp.Status, excerpt(answer))
	}
	if len(answer) > maxAnswer {
		return "", fmt.Errorf("asr openai: POST %s: answer larger than %d bytes", e.url, maxAnswer)
	}
	var out struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(answer, &out); err != nil || out.Text == nil {
		return "", fmt.Errorf("asr openai: POST %s: the answer is not {\"text\": ...}: %s", e.url, excerpt(answer))
	}
	if len(*out.Text) > MaxTranscript {
		return "", fmt.Errorf("asr openai: POST %s: a transcript longer than %d bytes", e.url, MaxTranscript)
	}
	return oneLine(*out.Text), nil
}

// excerpt is the start of a body, printable, for an error message.
func excerpt(body []byte) string {
	const n = 200
	s := strings.TrimSpace(string(body))
	if len(s) > n {
		s = s[:n] + "..."
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) && r != utf8.RuneError {
			return r
		}
		return '.'
	}, s)
	if s == "" {
		return "(empty body)"
	}
	return s
}
