package sipcall

import (
	"context"
	"testing"
	"time"

	"dialbox/internal/sipcall/sipcalltest"

	"github.com/emiago/diago"
)

// hearOnCall places a call to a far end that plays callee (8 kHz PCM,
// then silence) and runs Hear with o on it; far is what the far end heard
// of us.
func hearOnCall(t *testing.T, callee []byte, o HearOptions, dtmf ...rune) (u Utterance, far heard) {
	t.Helper()
	got := make(chan heard, 1)
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Answer()
		go sipcalltest.SendAudio(d, callee)
		for _, k := range dtmf {
			if err := sipcalltest.SendDTMF(d.RTPPacketWriter, k); err != nil {
				t.Error(err)
			}
		}
		got <- listen(t, d, nil)
	})
	ua := newTestUA(t, fe.trunk("udp"), nil)
	var err error
	res := ua.Call(testCtx(t), CallRequest{Trunk: "pbx", To: "+84901234567", Caller: "dialbox",
		Talk: func(ctx context.Context, l *Line) error {
			u, err = l.Hear(ctx, o)
			return err
		}})
	if err != nil || res.Err != nil || !res.Answered {
		t.Fatalf("hear: %v; call: %+v", err, res)
	}
	return u, <-got
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestHearAnUtteranceAfterAPause: the callee says a word after a second of
// silence; the utterance runs from preRoll before it to the end of
// EndSilence, in the audio's time.
func TestHearAnUtteranceAfterAPause(t *testing.T) {
	t.Parallel()
	for _, end := range []int{300, 700} {
		u, _ := hearOnCall(t, sipcalltest.Words(1000, 800), HearOptions{Timeout: 5 * time.Second, EndSilence: ms(end)})
		got := time.Duration(len(u.Speech)) * time.Second / 8000
		want := preRoll + ms(800) + ms(end)
		if got < want-framePeriod || got > want+framePeriod || u.Key != 0 {
			t.Errorf("end_silence %d ms: utterance of %v (key %q), want %v (±20 ms)", end, got, u.Key, want)
		}
	}
}

// TestHearStopsAtMaxSpeech: a callee who never stops is cut at MaxSpeech.
func TestHearStopsAtMaxSpeech(t *testing.T) {
	t.Parallel()
	u, _ := hearOnCall(t, sipcalltest.Words(200, 5000), HearOptions{EndSilence: ms(500), MaxSpeech: ms(1000)})
	got := time.Duration(len(u.Speech)) * time.Second / 8000
	if want := preRoll + ms(1000); got < want-framePeriod || got > want+framePeriod {
		t.Errorf("utterance of %v, want %v (±20 ms)", got, want)
	}
}

// TestHearSilence: nobody speaks within Timeout: no utterance.
func TestHearSilence(t *testing.T) {
	t.Parallel()
	u, _ := hearOnCall(t, nil, HearOptions{Timeout: ms(400)})
	if len(u.Speech) != 0 || u.Key != 0 {
		t.Errorf("heard %d samples, key %q, in silence", len(u.Speech), u.Key)
	}
}

// TestHearBargeIn: speech during the prompt stops it, and is the
// utterance; without barge-in the prompt plays whole and what was said
// meanwhile is not heard.
func TestHearBargeIn(t *testing.T) {
	t.Parallel()
	prompt := tone(4000)
	callee := sipcalltest.Words(600, 600)
	u, far := hearOnCall(t, callee, HearOptions{Prompt: prompt, BargeIn: true, EndSilence: ms(400)})
	if far.Duration() > 2*time.Second {
		t.Errorf("barge-in: the far end heard %v of the 4 s prompt", far.Duration())
	}
	got := time.Duration(len(u.Speech)) * time.Second / 8000
	if want := preRoll + ms(600) + ms(400); got < want-framePeriod || got > want+framePeriod {
		t.Errorf("barge-in: utterance of %v, want %v (±20 ms)", got, want)
	}

	u, far = hearOnCall(t, callee, HearOptions{Prompt: prompt, Timeout: ms(300)})
	if far.Duration() < 4*time.Second-framePeriod {
		t.Errorf("no barge-in: the far end heard %v of the 4 s prompt", far.Duration())
	}
	if len(u.Speech) != 0 {
		t.Errorf("no barge-in: heard %d samples said during the prompt", len(u.Speech))
	}
}

// TestHearAKeyInstead: with Keys, a key pressed is the answer (and stops
// a barge-in prompt); without, keys are not an answer.
func TestHearAKeyInstead(t *testing.T) {
	t.Parallel()
	u, far := hearOnCall(t, nil, HearOptions{Prompt: tone(4000), BargeIn: true, Keys: true}, '7')
	if u.Key != '7' || len(u.Speech) != 0 || far.Duration() > 2*time.Second {
		t.Errorf("key %q, %d samples, prompt heard %v; want 7 stopping the prompt", u.Key, len(u.Speech), far.Duration())
	}
	u, _ = hearOnCall(t, nil, HearOptions{Timeout: ms(500)}, '7')
	if u.Key != 0 {
		t.Errorf("key %q heard without Keys", u.Key)
	}
}
