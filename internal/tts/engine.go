package tts

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"dialbox/internal/audio"
	"dialbox/internal/program"
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
	out, err := program.Run(ctx, argv, strings.NewReader(stdin), MaxWAV)
	if err != nil {
		return audio.Buffer{}, err
	}
	if len(out) == 0 {
		return audio.Buffer{}, fmt.Errorf("%s: wrote no audio to stdout", argv[0])
	}
	b, err := phoneAudio(out)
	if err != nil {
		return audio.Buffer{}, fmt.Errorf("%s: output: %w", argv[0], err)
	}
	return b, nil
}
