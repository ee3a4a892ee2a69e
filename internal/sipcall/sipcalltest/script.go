package sipcalltest

import (
	"strings"
	"sync"

	"github.com/emiago/diago"
	"github.com/emiago/diago/audio"
	"github.com/emiago/diago/media"
)

// SendDTMF sends key as one RFC 4733 event the way real senders do: the
// first packet (marker set) with duration 0, two updates, then the end
// packet three times, all with the event's timestamp.
func SendDTMF(w *media.RTPPacketWriter, key rune) error {
	mu := writerLock(w)
	mu.Lock()
	defer mu.Unlock()
	event := byte(strings.IndexRune("0123456789*#ABCD", key))
	packets := []struct {
		end bool
		dur uint16
	}{{false, 0}, {false, 160}, {false, 320}, {true, 480}, {true, 480}, {true, 480}}
	for i, p := range packets {
		ev := media.DTMFEvent{Event: event, EndOfEvent: p.end, Volume: 10, Duration: p.dur}
		var next uint32
		if i == len(packets)-1 {
			next = 800 // the next event starts after this one's 100 ms
		}
		if _, err := w.WriteSamples(media.DTMFEncode(ev), next, i == 0, media.CodecTelephoneEvent8000.PayloadType); err != nil {
			return err
		}
	}
	return nil
}

// writers holds a lock per RTP writer. An event's packets and the audio's
// frames advance one timestamp: a frame written amid an event's packets
// would give them two timestamps, two events to any reader (the far end
// pressing a key twice), so each event is written whole.
var writers sync.Map // *media.RTPPacketWriter → *sync.Mutex

func writerLock(w *media.RTPPacketWriter) *sync.Mutex {
	mu, _ := writers.LoadOrStore(w, new(sync.Mutex))
	return mu.(*sync.Mutex)
}

// Words is audio a callee speaks, as 8 kHz 16-bit PCM: for each pair of
// durations in ms, that much silence then that much tone (a "word").
func Words(ms ...int) []byte {
	var pcm []byte
	for i := 0; i+1 < len(ms); i += 2 {
		pcm = append(pcm, make([]byte, 16*ms[i])...)
		pcm = append(pcm, Tone(ms[i+1])...)
	}
	return pcm
}

// SendAudio sends pcm (8 kHz 16-bit PCM) from d in the negotiated G.711,
// then silence, until d's media closes.
func SendAudio(d *diago.DialogServerSession, pcm []byte) {
	w, err := d.AudioWriter()
	if err != nil {
		return
	}
	encode := audio.EncodeUlawTo
	if media.CodecAudioFromSession(d.MediaSession()).PayloadType == media.CodecAudioAlaw.PayloadType {
		encode = audio.EncodeAlawTo
	}
	mu := writerLock(d.RTPPacketWriter)
	out := make([]byte, 160)
	silence := make([]byte, 320)
	for off := 0; ; off += 320 {
		frame := silence
		if off < len(pcm) {
			frame = pcm[off:min(off+320, len(pcm))]
		}
		n, err := encode(out, frame)
		if err != nil {
			return
		}
		mu.Lock()
		_, err = w.Write(out[:n])
		mu.Unlock()
		if err != nil {
			return
		}
	}
}
