package sipcall

import "github.com/pion/rtp"

// DTMFReader turns RFC 4733 telephone-event RTP packets into digits.
//
// diago's own reader (media.RTPDtmfReader) remembers an event only from a
// packet with a non-zero duration, so it drops an event whose first packet
// has duration 0, which is how real senders (sipp's captures among them)
// start. DTMFReader instead identifies an event by its RTP timestamp, which
// every packet of one event shares (RFC 4733 §2.5.1.2): it delivers the
// digit at the first packet of an event whatever its duration, and ignores
// that event's later updates, its end packets and their retransmissions,
// and packets of an earlier event arriving late.
type DTMFReader struct {
	seen bool
	ssrc uint32
	ts   uint32
}

// dtmfDigits are the events 0-15 (RFC 4733 §3.2).
const dtmfDigits = "0123456789*#ABCD"

// Feed takes one telephone-event packet and returns the digit it starts,
// if it starts one.
func (r *DTMFReader) Feed(hdr rtp.Header, payload []byte) (rune, bool) {
	if len(payload) < 4 || payload[0] >= byte(len(dtmfDigits)) {
		return 0, false
	}
	if r.seen && r.ssrc == hdr.SSRC && int32(hdr.Timestamp-r.ts) <= 0 {
		return 0, false // the same event again, or an older one
	}
	r.seen, r.ssrc, r.ts = true, hdr.SSRC, hdr.Timestamp
	return rune(dtmfDigits[payload[0]]), true
}
