// Package asr hears speech for real calls: a Recognizer turns one utterance
// of the callee (8 kHz mono 16-bit PCM, as internal/sipcall captures it)
// and the words a script expects (its hints) into text. Two engines, chosen
// by [asr] engine (docs/voicebot.md#recognizers): OpenAI, the
// /v1/audio/transcriptions protocol that whisper.cpp's server and most
// local speech servers speak, and Command, any program that reads a WAV
// file and writes the transcript to standard output.
package asr

import (
	"bytes"
	"context"
	"strings"
	"unicode"

	"dialbox/internal/audio"
)

// Recognizer hears one utterance.
type Recognizer interface {
	// Name identifies the engine and where it runs, for the logs.
	Name() string
	// Recognize returns what was said in speech (at any rate; the engine
	// sends it at its own), hints being the phrases the script expects.
	// Empty text is no error: nothing was made out.
	Recognize(ctx context.Context, speech audio.Buffer, hints []string) (string, error)
}

// Bounds on what reaches an engine and what comes back. Hints are a
// tenant's (a script's branch keys): past these, the rest are left out,
// as a vocabulary is a hint, not a contract.
const (
	MaxHints      = 200
	MaxHintBytes  = 200
	MaxTranscript = 64 << 10 // a transcript longer than this is a runaway
)

// cleanHints trims each hint, makes any control character (a newline
// among them: the command engine's file has one hint a line) a space,
// drops empty ones and repeats, and keeps MaxHints of at most MaxHintBytes.
func cleanHints(hints []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range hints {
		h = strings.Join(strings.FieldsFunc(h, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
		if len(h) > MaxHintBytes {
			h = strings.ToValidUTF8(h[:MaxHintBytes], "")
		}
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, h)
		if len(out) == MaxHints {
			break
		}
	}
	return out
}

// wav encodes speech as a WAV file at rate.
func wav(speech audio.Buffer, rate int) ([]byte, error) {
	if speech.Rate != rate {
		var err error
		if speech, err = audio.ResampleBuffer(speech, rate); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	err := audio.EncodeWAV(&b, speech)
	return b.Bytes(), err
}

// oneLine is a transcript as one line of text, its runs of white space
// (newlines among them) made single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
