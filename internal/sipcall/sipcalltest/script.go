package sipcalltest

import (
	"strings"

	"github.com/emiago/diago/media"
)

// SendDTMF sends key as one RFC 4733 event the way real senders do: the
// first packet (marker set) with duration 0, two updates, then the end
// packet three times, all with the event's timestamp.
func SendDTMF(w *media.RTPPacketWriter, key rune) error {
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
