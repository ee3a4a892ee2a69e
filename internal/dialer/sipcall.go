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
// DTMF, spoken answers go to the [asr] recognizer, a transfer is a REFER.
type sipScriptCall struct {
	d      *SIP
	line   *sipcall.Line
	fields map[string]string
}

func (c *sipScriptCall) Say(ctx context.Context, text string, bargeIn bool) (rune, error) {
	pcm, err := c.speak(ctx, text)
	if err != nil || pcm == nil {
		return 0, err
	}
	// The runner makes a key that stopped the prompt the gather's first.
	return c.line.Play(ctx, pcm, bargeIn)
}

func (c *sipScriptCall) Play(ctx context.Context, path string, bargeIn bool) (rune, error) {
	pcm, err := c.wav(path)
	if err != nil {
		return 0, err
	}
	return c.line.Play(ctx, pcm, bargeIn)
}

// speak renders text, its fields filled in, through the TTS cache; nil
// for blank text. The samples are the cache's own, shared by every call
// that says the same text.
func (c *sipScriptCall) speak(ctx context.Context, text string) ([]int16, error) {
	text = tts.Render(text, c.fields)
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	speech, err := c.d.speech.Synthesize(ctx, text, c.d.voice)
	if err != nil {
		return nil, fmt.Errorf("say: %w", err)
	}
	return phonePCM(speech)
}

// wav reads a WAV prompt from the prompts folder.
func (c *sipScriptCall) wav(path string) ([]int16, error) {
	// Validate keeps a play's path relative and inside the folder; Clean
	// again so that no path read here can leave it.
	f, err := os.Open(filepath.Join(c.d.promptsDir, filepath.Clean("/"+path)))
	if err != nil {
		return nil, fmt.Errorf("play: %w", err)
	}
	defer f.Close()
	b, err := audio.DecodeWAV(f)
	if err != nil {
		return nil, fmt.Errorf("play %s: %w", path, err)
	}
	return phonePCM(b)
}

// phonePCM is b as the line plays it: 8 kHz samples, b's own when it
// is at that rate.
func phonePCM(b audio.Buffer) ([]int16, error) {
	if b.Rate != audio.PhoneRate {
		var err error
		if b, err = audio.ResampleBuffer(b, audio.PhoneRate); err != nil {
			return nil, err
		}
	}
	return b.Samples, nil
}

// Listen plays the prompt, captures the callee's answer and has the [asr]
// recognizer hear it (docs/voicebot.md#listening-on-a-real-call). Keys pressed
// instead are read as Gather reads them, the first one included.
func (c *sipScriptCall) Listen(ctx context.Context, o script.ListenOptions) (script.Heard, error) {
	if c.d.ears == nil {
		return script.Heard{}, errors.New("listen: no recognizer: set [asr] engine (docs/voicebot.md#recognizers)")
	}
	var prompt []int16
	var err error
	switch {
	case o.Prompt.Say != "":
		prompt, err = c.speak(ctx, o.Prompt.Say)
	case o.Prompt.Play != "":
		prompt, err = c.wav(o.Prompt.Play)
	}
	if err != nil {
		return script.Heard{}, err
	}
	u, err := c.line.Hear(ctx, sipcall.HearOptions{Prompt: prompt, BargeIn: o.BargeIn, Keys: o.Keys,
		Timeout: o.Timeout, EndSilence: o.EndSilence, MaxSpeech: o.MaxSpeech})
	if err != nil {
		return script.Heard{}, err
	}
	if u.Key != 0 {
		keys := string(u.Key)
		if o.MaxDigits > 1 && (o.FinishOnKey == 0 || u.Key != o.FinishOnKey) {
			more, _, err := c.line.Gather(ctx, o.MaxDigits-1, o.Timeout, o.FinishOnKey)
			if err != nil {
				return script.Heard{}, err
			}
			keys += more
		}
		return script.Heard{Keys: keys}, nil
	}
	if len(u.Speech) == 0 {
		return script.Heard{}, nil
	}
	text, err := c.d.ears.Recognize(ctx, audio.Buffer{Rate: audio.PhoneRate, Samples: u.Speech}, o.Hints)
	if err != nil {
		return script.Heard{}, fmt.Errorf("listen: %w", err)
	}
	return script.Heard{Text: text}, nil
}

func (c *sipScriptCall) Gather(ctx context.Context, opts script.GatherOptions) (string, bool, error) {
	return c.line.Gather(ctx, opts.MaxDigits, opts.Timeout, opts.FinishOnKey)
}

// Transfer sends a REFER; a far end that refuses it leaves the call up and
// the script failed, with the refusal as its error.
func (c *sipScriptCall) Transfer(ctx context.Context, uri string) error {
	return c.line.Refer(ctx, uri)
}

// Hangup leaves the BYE to sipcall, which sends it when the script returns.
func (c *sipScriptCall) Hangup(context.Context) error { return nil }
