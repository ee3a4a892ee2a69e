package tts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"dialbox/internal/audio"
)

// HTTP speaks through a TTS web service answering a GET with a WAV body,
// such as OpenTTS (/api/tts?voice={voice}&text={text}) or MaryTTS
// (/process?INPUT_TEXT={text}&LOCALE={voice}&INPUT_TYPE=TEXT&OUTPUT_TYPE=AUDIO&AUDIO=WAVE_FILE).
type HTTP struct {
	template string
	timeout  time.Duration
	client   *http.Client
}

// DefaultHTTPTimeout bounds one request when NewHTTP is given no timeout.
const DefaultHTTPTimeout = 30 * time.Second

// NewHTTP returns an engine fetching urlTemplate, an absolute http or https
// URL where "{text}" and "{voice}" are replaced, URL-escaped, in the path or
// query (never in the host: the text must not choose where it is sent). A
// request taking longer than timeout (DefaultHTTPTimeout if zero) fails.
func NewHTTP(urlTemplate string, timeout time.Duration) (*HTTP, error) {
	u, err := url.Parse(strings.NewReplacer("{text}", "T", "{voice}", "V").Replace(urlTemplate))
	if err != nil {
		return nil, fmt.Errorf("tts http: url %q: %w", urlTemplate, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("tts http: url %q is not an absolute http or https URL", urlTemplate)
	}
	rest := urlTemplate[strings.Index(urlTemplate, "://")+3:]
	if authority := rest[:strings.IndexAny(rest+"/", "/?#")]; strings.ContainsAny(authority, "{}") {
		return nil, fmt.Errorf("tts http: url %q: {text} and {voice} may only appear in the path or query", urlTemplate)
	}
	if timeout <= 0 {
		timeout = DefaultHTTPTimeout
	}
	return &HTTP{template: urlTemplate, timeout: timeout, client: &http.Client{}}, nil
}

// Name is "http" and the URL template; mind a key in the template before
// logging it.
func (h *HTTP) Name() string { return "http " + h.template }

// Synthesize fetches the rendering of text in voice. The body's bytes, not
// its Content-Type (audio/wav, audio/x-wav or whatever a service says),
// decide whether it is a WAV. A non-2xx status or a body that is not a WAV
// at all is an error quoting the start of the body, which is where services
// put their reason; errors never show the query, which holds the text.
func (h *HTTP) Synthesize(ctx context.Context, text, voice string) (audio.Buffer, error) {
	u := strings.NewReplacer("{text}", escape(text), "{voice}", escape(voice)).Replace(h.template)
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return audio.Buffer{}, fmt.Errorf("tts http: %w", err)
	}
	req.Header.Set("Accept", "audio/wav")
	// The URL carries the text and maybe a key: errors name the service only.
	where := req.URL.Scheme + "://" + req.URL.Host + req.URL.Path
	resp, err := h.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return audio.Buffer{}, fmt.Errorf("tts http: GET %s: no answer within %v: %w", where, h.timeout, ctx.Err())
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its message repeats the whole URL
		}
		return audio.Buffer{}, fmt.Errorf("tts http: GET %s: %w", where, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxWAV+1))
	if err != nil {
		return audio.Buffer{}, fmt.Errorf("tts http: GET %s: reading the answer: %w", where, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return audio.Buffer{}, fmt.Errorf("tts http: GET %s: %s: %s", where, resp.Status, excerpt(body))
	}
	if len(body) > MaxWAV {
		return audio.Buffer{}, fmt.Errorf("tts http: GET %s: answer larger than %d bytes", where, MaxWAV)
	}
	b, err := phoneAudio(body)
	if err != nil {
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		err = fmt.Errorf("tts http: GET %s: answer of type %q is not usable audio: %w", where, ct, err)
		if !bytes.HasPrefix(body, []byte("RIFF")) {
			// Not audio at all: probably a message saying why.
			err = fmt.Errorf("%w: %s", err, excerpt(body))
		}
		return audio.Buffer{}, err
	}
	return b, nil
}

// escape makes s safe in a path or a query: QueryEscape's "+" for a space
// would stay a plus sign in a path, "%20" is a space in both.
func escape(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
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
