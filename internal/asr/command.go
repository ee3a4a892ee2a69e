package asr

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dialbox/internal/audio"
	"dialbox/internal/program"
)

// Command hears by running a program on the utterance, such as the
// pocketsphinx wrapper of docs/voicebot.md#recognizers or a site's own.
type Command struct {
	argv    []string
	rate    int
	timeout time.Duration
}

// DefaultTimeout bounds one recognition when an engine is given none.
const DefaultTimeout = 15 * time.Second

// NewCommand returns an engine running argv, where an argument "{wav}" is
// replaced by the path of the utterance as a WAV file (mono 16-bit at rate
// Hz) and an argument "{hints}" by the path of a file of the hints, one a
// line. Placeholders are whole arguments, and the program is run directly,
// never through a shell: the hints, a tenant's text, reach it only inside
// the file (docs/voicebot.md#recognizers). A run longer than timeout
// (DefaultTimeout if zero) is killed.
func NewCommand(argv []string, rate int, timeout time.Duration) (*Command, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("asr command: no program to run")
	}
	if strings.ContainsAny(argv[0], "{}") {
		return nil, fmt.Errorf("asr command: the program %q must not hold a placeholder", argv[0])
	}
	hasWAV := false
	for _, a := range argv[1:] {
		switch {
		case a == "{wav}":
			hasWAV = true
		case a == "{hints}":
		case strings.Contains(a, "{wav}") || strings.Contains(a, "{hints}"):
			return nil, fmt.Errorf("asr command: the argument %q must be {wav} or {hints} alone: placeholders are whole arguments", a)
		}
	}
	if !hasWAV {
		return nil, errors.New("asr command: no {wav} argument: the program would not get the utterance")
	}
	if err := checkRate(rate); err != nil {
		return nil, fmt.Errorf("asr command: %w", err)
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Command{argv: append([]string(nil), argv...), rate: rate, timeout: timeout}, nil
}

// checkRate: the rates a recognizer may want, from the phone's own to
// studio audio.
func checkRate(rate int) error {
	if rate < audio.PhoneRate || rate > 48000 {
		return fmt.Errorf("sample rate %d Hz: it must be between %d and 48000", rate, audio.PhoneRate)
	}
	return nil
}

// Name is "command" and the quoted argv template.
func (c *Command) Name() string { return program.Name(c.argv) }

// Recognize writes speech and hints to a temporary folder, runs the
// program and returns its standard output as one line.
func (c *Command) Recognize(ctx context.Context, speech audio.Buffer, hints []string) (string, error) {
	w, err := wav(speech, c.rate)
	if err != nil {
		return "", fmt.Errorf("asr command: %w", err)
	}
	dir, err := os.MkdirTemp("", "dialbox-asr-")
	if err != nil {
		return "", fmt.Errorf("asr command: %w", err)
	}
	defer os.RemoveAll(dir)
	wavPath, hintsPath := filepath.Join(dir, "utterance.wav"), filepath.Join(dir, "hints.txt")
	var lines strings.Builder
	for _, h := range cleanHints(hints) {
		lines.WriteString(h)
		lines.WriteByte('\n')
	}
	if err := os.WriteFile(wavPath, w, 0o600); err != nil {
		return "", fmt.Errorf("asr command: %w", err)
	}
	if err := os.WriteFile(hintsPath, []byte(lines.String()), 0o600); err != nil {
		return "", fmt.Errorf("asr command: %w", err)
	}
	argv := make([]string, len(c.argv))
	for i, a := range c.argv {
		switch {
		case i > 0 && a == "{wav}":
			a = wavPath
		case i > 0 && a == "{hints}":
			a = hintsPath
		}
		argv[i] = a
	}

	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	out, err := program.Run(ctx, argv, nil, MaxTranscript)
	switch {
	case parent.Err() != nil: // the call ended
		return "", context.Cause(parent)
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s: no transcript within %v: %w", argv[0], c.timeout, ctx.Err())
	case err != nil:
		return "", err
	}
	return oneLine(strings.ToValidUTF8(string(out), "")), nil
}
