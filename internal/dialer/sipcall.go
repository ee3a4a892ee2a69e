package dialer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"dialbox/internal/audio"
	"dialbox/internal/script"
	"dialbox/internal/sipcall"
	"dialbox/internal/tts"
)

// sipScriptCall is an answered SIP call as a script.Call
// (docs/voicebot.md#scripts-over-sip): says are rendered through the TTS
// cache, plays read WAV files from the prompts folder, keys are RFC 4733
// DTMF, a transfer is a REFER.
type sipScriptCall struct {
	d      *SIP
	line   *sipcall.Line
	fields map[string]string
}

func (c *sipScriptCall) Say(ctx context.Context, text string, bargeIn bool) (rune, error) {
	text = tts.Render(text, c.fields)
	if strings.TrimSpace(text) == "" {
		return 0, nil
	}
	speech, err := c.d.speech.Synthesize(ctx, text, c.d.voice)
	if err != nil {
		return 0, fmt.Errorf("say: %w", err)
	}
	return c.play(ctx, speech, bargeIn)
}

func (c *sipScriptCall) Play(ctx context.Context, path string, bargeIn bool) (rune, error) {
	// Validate keeps a play's path relative and inside the folder; Clean
	// again so that no path read here can leave it.
	f, err := os.Open(filepath.Join(c.d.promptsDir, filepath.Clean("/"+path)))
	if err != nil {
		return 0, fmt.Errorf("play: %w", err)
	}
	defer f.Close()
	b, err := audio.DecodeWAV(f)
	if err != nil {
		return 0, fmt.Errorf("play %s: %w", path, err)
	}
	return c.play(ctx, b, bargeIn)
}

func (c *sipScriptCall) play(ctx context.Context, b audio.Buffer, bargeIn bool) (rune, error) {
	if b.Rate != audio.PhoneRate {
		var err error
		if b, err = audio.ResampleBuffer(b, audio.PhoneRate); err != nil {
			return 0, err
		}
	}
	// The runner makes a key that stopped the prompt the gather's first.
	return c.line.Play(ctx, audio.EncodePCM16(b.Samples), bargeIn)
}

func (c *sipScriptCall) Gather(ctx context.Context, opts script.GatherOptions) (string, bool, error) {
	return c.line.Gather(ctx, opts.MaxDigits, opts.Timeout, opts.FinishOnKey)
}

// Listen cannot hear speech yet: the SIP line has no listener
// (docs/voicebot.md#spoken-answers), so a spoken answer fails the script.
func (c *sipScriptCall) Listen(context.Context, script.ListenOptions) (script.Heard, error) {
	return script.Heard{}, errors.New("listen: speech needs the SIP line's listener, which this version lacks")
}

// Transfer sends a REFER; a far end that refuses it leaves the call up and
// the script failed, with the refusal as its error.
func (c *sipScriptCall) Transfer(ctx context.Context, uri string) error {
	return c.line.Refer(ctx, uri)
}

// Hangup leaves the BYE to sipcall, which sends it when the script returns.
func (c *sipScriptCall) Hangup(context.Context) error { return nil }
