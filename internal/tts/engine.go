package tts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"dialbox/internal/audio"
)

// Engine speaks text.
type Engine interface {
	// Name identifies the engine and its configuration: two engines that
	// may render the same text differently have different names, so the
	// Cache never serves one's audio for the other.
	Name() string
	// Synthesize renders text in voice (the engine's own voice name, e.g.
	// "vi" for espeak-ng) as PCM at audio.PhoneRate.
	Synthesize(ctx context.Context, text, voice string) (audio.Buffer, error)
}

// MaxWAV bounds the WAV an engine may answer: a minute of 48 kHz stereo
// 32-bit float is 23 MB, so anything bigger is a runaway, not speech.
const MaxWAV = 64 << 20

// phoneAudio decodes an engine's WAV answer and brings it to the phone rate.
func phoneAudio(wav []byte) (audio.Buffer, error) {
	b, err := audio.DecodeWAV(bytes.NewReader(wav))
	if err != nil {
		return audio.Buffer{}, err
	}
	return audio.ResampleBuffer(b, audio.PhoneRate)
}

// runWAV runs argv (never through a shell) with stdin as its input and
// returns its standard output, expected to be a WAV file, at the phone rate.
func runWAV(ctx context.Context, argv []string, stdin string) (audio.Buffer, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout capped
	var stderr tail
	stdout.max = MaxWAV
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// A grandchild holding the pipes open must not keep Wait from
	// returning once the context is done.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return audio.Buffer{}, fmt.Errorf("%s: %w", argv[0], ctx.Err())
	}
	if stdout.over {
		return audio.Buffer{}, fmt.Errorf("%s: wrote more than %d bytes", argv[0], MaxWAV)
	}
	msg := strings.TrimSpace(stderr.String())
	if err == nil && stdout.buf.Len() == 0 {
		err = errors.New("wrote no audio to stdout")
	}
	if err != nil && msg != "" {
		return audio.Buffer{}, fmt.Errorf("%s: %w: %s", argv[0], err, msg)
	}
	if err != nil {
		return audio.Buffer{}, fmt.Errorf("%s: %w", argv[0], err)
	}
	b, err := phoneAudio(stdout.buf.Bytes())
	if err != nil {
		return audio.Buffer{}, fmt.Errorf("%s: output: %w", argv[0], err)
	}
	return b, nil
}

// capped is a buffer that stops growing at max bytes; a write past it fails,
// which closes the pipe, so the command's next write fails and it stops. It
// holds its bytes.Buffer in a field, not embedded: an embedded one's ReadFrom
// would let exec's copy bypass Write and the cap.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.buf.Len()+len(p) > c.max {
		c.over = true
		return 0, errors.New("output too large")
	}
	return c.buf.Write(p)
}

// tail keeps the last KB written: enough of a tool's stderr to say why it
// failed, not a flood.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 1024 {
		t.b = append(t.b[:0], t.b[len(t.b)-1024:]...)
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.b) }
