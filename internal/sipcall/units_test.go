package sipcall

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/emiago/diago/audio"
	"github.com/emiago/diago/media"
	"github.com/pion/rtp"
)

func TestFormatNumber(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, format, want string }{
		{"+84912345678", NumberE164, "+84912345678"},
		{"+84912345678", "", "+84912345678"},
		{"+84912345678", NumberE164Digits, "84912345678"},
		{"+84912345678", NumberNational, "0912345678"},
		{"+842873001234", NumberNational, "02873001234"},
		{"+12025550123", NumberNational, "2025550123"},
		{"+442079460000", NumberNational, "02079460000"},
		{"+4915123456789", NumberNational, "015123456789"},
	} {
		got, err := FormatNumber(tc.in, tc.format)
		if err != nil || got != tc.want {
			t.Errorf("FormatNumber(%q, %q) = %q, %v; want %q", tc.in, tc.format, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, format string }{
		{"0912345678", NumberNational},
		{"84912345678", NumberE164},
		{"+84 912 345 678", NumberE164},
		{"+0912345678", NumberE164},
		{"+1234567890123456", NumberE164},
		{"+84912345678", "international"},
	} {
		if got, err := FormatNumber(tc.in, tc.format); err == nil {
			t.Errorf("FormatNumber(%q, %q) = %q, want an error", tc.in, tc.format, got)
		}
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res  CallResult
		want string
	}{
		{CallResult{Answered: true, Status: 200, EndedBy: EndPromptDone}, OutcomeAnswered},
		{CallResult{Answered: true, Status: 200, EndedBy: EndCancelled}, OutcomeAnswered},
		{CallResult{Answered: true, Status: 200, EndedBy: EndError, Err: io.EOF}, OutcomeAnswered},
		{CallResult{Status: 486, EndedBy: EndCallee}, OutcomeBusy},
		{CallResult{Status: 600, EndedBy: EndCallee}, OutcomeBusy},
		{CallResult{Status: 603, EndedBy: EndCallee}, OutcomeRejected},
		{CallResult{Status: 480, EndedBy: EndCallee}, OutcomeNoAnswer},
		{CallResult{Status: 408, EndedBy: EndCallee}, OutcomeNoAnswer},
		{CallResult{Status: 487, EndedBy: EndRingTimeout}, OutcomeNoAnswer},
		{CallResult{EndedBy: EndRingTimeout}, OutcomeNoAnswer},
		{CallResult{Status: 487, EndedBy: EndCancelled}, OutcomeCanceled},
		{CallResult{Status: 404, EndedBy: EndCallee}, OutcomeInvalidNumber},
		{CallResult{Status: 484, EndedBy: EndCallee}, OutcomeInvalidNumber},
		{CallResult{Status: 604, EndedBy: EndCallee}, OutcomeInvalidNumber},
		{CallResult{Status: 401, EndedBy: EndCallee}, OutcomeFailed},
		{CallResult{Status: 403, EndedBy: EndCallee}, OutcomeFailed},
		{CallResult{Status: 487, EndedBy: EndCallee}, OutcomeFailed},
		{CallResult{Status: 503, EndedBy: EndCallee}, OutcomeFailed},
		{CallResult{Status: 302, EndedBy: EndCallee}, OutcomeFailed},
		{CallResult{EndedBy: EndError, Err: io.EOF}, OutcomeFailed},
		{CallResult{Status: 486, EndedBy: EndError, Err: io.EOF}, OutcomeFailed},
	} {
		if got := Outcome(tc.res); got != tc.want {
			t.Errorf("Outcome(status %d, answered %v, ended by %s, err %v) = %s, want %s",
				tc.res.Status, tc.res.Answered, tc.res.EndedBy, tc.res.Err, got, tc.want)
		}
	}
}

// dtmfPacket is one telephone-event packet of the event starting at ts.
func dtmfPacket(seq uint16, ts uint32, event byte, end bool, dur uint16, marker bool) *rtp.Packet {
	return &rtp.Packet{
		Header:  rtp.Header{Version: 2, PayloadType: 101, SequenceNumber: seq, Timestamp: ts, SSRC: 42, Marker: marker},
		Payload: media.DTMFEncode(media.DTMFEvent{Event: event, EndOfEvent: end, Volume: 10, Duration: dur}),
	}
}

// realEvent is an event as real senders send it: the first packet with
// duration 0, updates, and the end packet three times.
func realEvent(seq uint16, ts uint32, event byte) []*rtp.Packet {
	return []*rtp.Packet{
		dtmfPacket(seq, ts, event, false, 0, true),
		dtmfPacket(seq+1, ts, event, false, 160, false),
		dtmfPacket(seq+2, ts, event, false, 320, false),
		dtmfPacket(seq+3, ts, event, true, 400, false),
		dtmfPacket(seq+4, ts, event, true, 400, false),
		dtmfPacket(seq+5, ts, event, true, 400, false),
	}
}

func TestDTMFReader(t *testing.T) {
	t.Parallel()
	var pkts []*rtp.Packet
	pkts = append(pkts, realEvent(1, 1000, 1)...)
	pkts = append(pkts, realEvent(7, 2000, 1)...)                 // the same digit again
	pkts = append(pkts, dtmfPacket(6, 1000, 1, true, 400, false)) // a late retransmission of the first
	pkts = append(pkts, realEvent(13, 3000, 11)...)
	pkts = append(pkts, dtmfPacket(19, 4000, 16, false, 0, true)) // flash: not a digit
	pkts = append(pkts, realEvent(20, 5000, 15)[3:]...)           // only the end packets arrived
	var r DTMFReader
	var got []rune
	for _, p := range pkts {
		if d, ok := r.Feed(p.Header, p.Payload); ok {
			got = append(got, d)
		}
	}
	if string(got) != "11#D" {
		t.Errorf("digits %q, want 11#D", string(got))
	}
}

// packetSource hands out packets to diago's RTP packet reader.
type packetSource []*rtp.Packet

func (s *packetSource) ReadRTP(buf []byte, p *rtp.Packet) (int, error) {
	if len(*s) == 0 {
		return 0, io.EOF
	}
	next := (*s)[0]
	*s = (*s)[1:]
	b, err := next.Marshal()
	if err != nil {
		return 0, err
	}
	n := copy(buf, b)
	return n, p.Unmarshal(buf[:n])
}

// diagoDigits are the digits diago v0.31.0's own DTMF reader finds in pkts.
func diagoDigits(pkts []*rtp.Packet) string {
	src := packetSource(pkts)
	pr := media.NewRTPPacketReader(&src, media.CodecTelephoneEvent8000)
	dr := media.NewRTPDTMFReader(media.CodecTelephoneEvent8000, pr, pr)
	buf := make([]byte, media.RTPBufSize)
	var got []rune
	for {
		if _, err := dr.Read(buf); err != nil {
			return string(got)
		}
		if d, ok := dr.ReadDTMF(); ok {
			got = append(got, d)
		}
	}
}

// TestDiagoDTMFReaderDropsZeroDurationStart shows why DTMFReader exists:
// diago's reader loses an event whose first packet has duration 0, and
// reads the same event when it starts at 160. When this test fails, diago
// has fixed it.
func TestDiagoDTMFReaderDropsZeroDurationStart(t *testing.T) {
	t.Parallel()
	zero := realEvent(1, 1000, 5)
	nonZero := realEvent(1, 1000, 5)
	nonZero[0] = dtmfPacket(1, 1000, 5, false, 160, true)
	if got := diagoDigits(zero); got != "" {
		t.Errorf("diago read %q from an event starting at duration 0", got)
	}
	if got := diagoDigits(nonZero); got != "5" {
		t.Errorf("diago read %q from an event starting at duration 160, want 5", got)
	}
}

func TestTrunkHidesPassword(t *testing.T) {
	t.Parallel()
	const pw = "hunter2-secret"
	tr := Trunk{Name: "pbx", Address: "10.0.0.1:5060", Username: "dialbox", Password: pw}
	opts := Options{Trunks: []Trunk{tr}}
	var logs strings.Builder
	slog.New(slog.NewTextHandler(&logs, nil)).Info("trunk", "trunk", tr, "trunks", opts.Trunks)
	out := fmt.Sprintf("%v %+v %#v %s %v %+v", tr, tr, tr, tr, opts, opts) + logs.String()
	if strings.Contains(out, pw) || !strings.Contains(out, `auth as "dialbox"`) {
		t.Errorf("output:\n%s", out)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	good := Trunk{Name: "pbx", Address: "10.0.0.1:5060"}
	for _, opts := range []Options{
		{ListenAddr: "127.0.0.1"},
		{ListenAddr: "127.0.0.1:99999"},
		{ListenAddr: "example.com:5060"},
		{ListenAddr: "127.0.0.1:0", ExternalIP: "example.com"},
		{ListenAddr: "127.0.0.1:0", RTPPortMin: 20000, RTPPortMax: 20001},
		{ListenAddr: "127.0.0.1:0", RTPPortMin: 80, RTPPortMax: 2000},
		{ListenAddr: "127.0.0.1:0", NoRTPTimeout: -1},
		{ListenAddr: "127.0.0.1:0", Trunks: []Trunk{good, good}},
		{ListenAddr: "127.0.0.1:0", Trunks: []Trunk{{Address: "10.0.0.1:5060"}}},
		{ListenAddr: "127.0.0.1:0", Trunks: []Trunk{{Name: "pbx", Address: "10.0.0.1:0"}}},
		{ListenAddr: "127.0.0.1:0", Trunks: []Trunk{{Name: "pbx", Address: "sip:pbx@10.0.0.1"}}},
		{ListenAddr: "127.0.0.1:0", Trunks: []Trunk{{Name: "pbx", Address: "10.0.0.1", Transport: "tls"}}},
		{ListenAddr: "127.0.0.1:0", Trunks: []Trunk{{Name: "pbx", Address: "10.0.0.1", NumberFormat: "intl"}}},
	} {
		if u, err := New(opts); err == nil {
			u.Close()
			t.Errorf("New(%+v) accepted", opts)
		}
	}
	u, err := New(Options{ListenAddr: "127.0.0.1:0", Trunks: []Trunk{{Name: "pbx", Address: "pbx.example.com"}}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if tr := u.trunks["pbx"]; tr.host != "pbx.example.com" || tr.port != 5060 {
		t.Errorf("trunk %+v", tr)
	}
	if err := u.Close(); err != nil {
		t.Error(err)
	}
}

// TestEncodeIsG711: the prompt's samples are encoded as diago's encoders
// encode 16-bit little-endian PCM, for every sample value.
func TestEncodeIsG711(t *testing.T) {
	samples := make([]int16, 1<<16)
	for i := range samples {
		samples[i] = int16(i - 1<<15)
	}
	le := make([]byte, 2*len(samples))
	for i, s := range samples {
		binary.LittleEndian.PutUint16(le[2*i:], uint16(s))
	}
	for _, c := range []struct {
		name string
		ours func([]byte, []int16)
		want func(dst, pcm []byte) (int, error)
	}{{"PCMU", encodeUlaw, audio.EncodeUlawTo}, {"PCMA", encodeAlaw, audio.EncodeAlawTo}} {
		got, want := make([]byte, len(samples)), make([]byte, len(samples))
		c.ours(got, samples)
		if _, err := c.want(want, le); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encoding differs from diago's", c.name)
		}
	}
	if n := testing.AllocsPerRun(100, func() { encodeUlaw(le[:frameLen], samples[:frameLen]) }); n != 0 {
		t.Errorf("encoding a frame allocates %v times", n)
	}
}
