package sipcall

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/audio"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo/sip"
)

// Line is an answered call as CallRequest.Talk sees it: it plays audio,
// reads the callee's keys, hears the callee's utterances (Hear) and
// transfers the call. Its methods are for the
// Talk goroutine alone.
type Line struct {
	d      *diago.DialogClientSession
	w      io.Writer
	encode func(dst []byte, samples []int16)
	keys   <-chan rune
	heard  *hearing
	rec    *recording
}

// hearing carries the far end's audio, decoded, from readRTP to Listen
// while on.
type hearing struct {
	on     atomic.Bool
	frames chan []int16
}

// decodeG711 decodes one G.711 payload; false for another payload type
// (DTMF events) or a bad one.
func decodeG711(pt uint8, payload []byte) ([]int16, bool) {
	var decode func(dst, src []byte) (int, error)
	switch pt {
	case media.CodecAudioUlaw.PayloadType:
		decode = audio.DecodeUlawTo
	case media.CodecAudioAlaw.PayloadType:
		decode = audio.DecodeAlawTo
	default:
		return nil, false
	}
	pcm := make([]byte, 2*len(payload))
	n, err := decode(pcm, payload)
	if err != nil {
		return nil, false
	}
	samples := make([]int16, n/2)
	for i := range samples {
		samples[i] = int16(binary.LittleEndian.Uint16(pcm[2*i:]))
	}
	return samples, true
}

// offer passes decoded audio on; a full buffer drops it, as a lost packet.
func (h *hearing) offer(samples []int16) {
	select {
	case h.frames <- samples:
	default:
	}
}

// Listen passes the callee's audio, 8 kHz PCM as it arrives, to hear until
// hear returns true, ctx ends, or limit (wall-clock) passes: false then.
func (l *Line) Listen(ctx context.Context, limit time.Duration, hear func(samples []int16) bool) (bool, error) {
	l.heard.on.Store(true)
	defer l.heard.on.Store(false)
	t := time.NewTimer(limit)
	defer t.Stop()
	for {
		select {
		case f := <-l.heard.frames:
			if hear(f) {
				return true, nil
			}
		case <-t.C:
			return false, nil
		case <-ctx.Done():
			return false, context.Cause(ctx)
		}
	}
}

// Play sends samples (8 kHz mono, only read) to the callee. With bargeIn, a key
// pressed while it plays stops it at once and is returned; without, keys
// pressed meanwhile wait for the next Gather.
func (l *Line) Play(ctx context.Context, samples []int16, bargeIn bool) (rune, error) {
	var key rune
	interrupt := func() bool { return false }
	if bargeIn {
		interrupt = func() bool {
			select {
			case key = <-l.keys:
				return true
			default:
				return false
			}
		}
	}
	err := l.play(ctx, samples, interrupt)
	return key, err
}

// play sends samples in 20 ms frames until they have all gone or
// interrupt, asked before each frame, says to stop.
func (l *Line) play(ctx context.Context, samples []int16, interrupt func() bool) error {
	out := make([]byte, frameLen)
	for off := 0; off < len(samples); off += frameLen {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if interrupt() {
			return nil
		}
		f := samples[off:min(off+frameLen, len(samples))]
		l.encode(out, f)
		l.rec.send(f)
		// diago's writer paces the frames on the RTP clock.
		if _, err := l.w.Write(out[:len(f)]); err != nil {
			return fmt.Errorf("sipcall: playing: %w", err)
		}
	}
	return nil
}

// Gather reads keys until maxDigits were pressed, or finish was (it is then
// the last of keys; 0 for none), or timeout passed without a key
// (timedOut).
func (l *Line) Gather(ctx context.Context, maxDigits int, timeout time.Duration, finish rune) (keys string, timedOut bool, err error) {
	var got []rune
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case k := <-l.keys:
			got = append(got, k)
			if len(got) >= maxDigits || finish != 0 && k == finish {
				return string(got), false, nil
			}
			t.Reset(timeout)
		case <-t.C:
			return string(got), true, nil
		case <-ctx.Done():
			return string(got), false, context.Cause(ctx)
		}
	}
}

// ReferWait is how long Refer waits, after the 202, for the NOTIFY that
// says how the far end's call to the target went.
const ReferWait = 2 * time.Second

// Refer asks the callee's side to call uri instead (REFER, RFC 3515). An
// error when it refuses the REFER (anything but 202), or a NOTIFY reports
// that its call to uri failed; a 202 with no final NOTIFY within ReferWait
// counts as done, as many trunks never send one.
func (l *Line) Refer(ctx context.Context, uri string) error {
	var to sip.Uri
	if err := sip.ParseUri(uri, &to); err != nil {
		return fmt.Errorf("sipcall: transfer to %q: %w", uri, err)
	}
	final := make(chan int, 1)
	onNotify := func(code int) {
		if code >= 200 {
			select {
			case final <- code:
			default:
			}
		}
	}
	if err := l.d.ReferOptions(ctx, to, diago.ReferClientOptions{OnNotify: onNotify}); err != nil {
		return fmt.Errorf("sipcall: REFER: %w", err)
	}
	t := time.NewTimer(ReferWait)
	defer t.Stop()
	select {
	case code := <-final:
		if code >= 300 {
			return fmt.Errorf("sipcall: transfer to %s failed: NOTIFY %d", uri, code)
		}
	case <-t.C:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	return nil
}
