package tts

import (
	"context"

	"dialbox/internal/audio"
)

// Espeak speaks with the espeak-ng command-line synthesiser ("vi" is its
// Vietnamese voice).
type Espeak struct {
	path string
}

// NewEspeak returns the espeak-ng engine running the program at path, or
// "espeak-ng" found on PATH when path is empty.
func NewEspeak(path string) *Espeak {
	if path == "" {
		path = "espeak-ng"
	}
	return &Espeak{path: path}
}

// Name is "espeak-ng".
func (e *Espeak) Name() string { return "espeak-ng" }

// Synthesize runs `espeak-ng -v VOICE --stdout` with the text on standard
// input, where nothing in it can be taken for an option; an empty voice
// leaves espeak-ng's default.
func (e *Espeak) Synthesize(ctx context.Context, text, voice string) (audio.Buffer, error) {
	argv := []string{e.path, "--stdout"}
	if voice != "" {
		argv = append(argv, "-v", voice)
	}
	return runWAV(ctx, argv, text)
}
