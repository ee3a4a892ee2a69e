package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"dialbox/internal/audio"
)

// pcapWriter builds a pcap file of Ethernet/IPv4/UDP frames on 127.0.0.1.
type pcapWriter struct{ b []byte }

func newPcap() *pcapWriter {
	h := make([]byte, 24)
	binary.LittleEndian.PutUint32(h, 0xa1b23c4d) // nanosecond timestamps
	binary.LittleEndian.PutUint32(h[16:], 65535)
	binary.LittleEndian.PutUint32(h[20:], 1) // Ethernet
	return &pcapWriter{b: h}
}

func (p *pcapWriter) udp(at time.Duration, sport, dport int, payload []byte) {
	frame := make([]byte, 14+20+8, 14+20+8+len(payload))
	binary.BigEndian.PutUint16(frame[12:], 0x0800)
	ip := frame[14:]
	ip[0], ip[9] = 0x45, 17
	copy(ip[12:], []byte{127, 0, 0, 1})
	copy(ip[16:], []byte{127, 0, 0, 1})
	binary.BigEndian.PutUint16(ip[20:], uint16(sport))
	binary.BigEndian.PutUint16(ip[22:], uint16(dport))
	frame = append(frame, payload...)
	rec := make([]byte, 16)
	t := time.Unix(1_800_000_000, 0).Add(at)
	binary.LittleEndian.PutUint32(rec, uint32(t.Unix()))
	binary.LittleEndian.PutUint32(rec[4:], uint32(t.Nanosecond()))
	binary.LittleEndian.PutUint32(rec[8:], uint32(len(frame)))
	binary.LittleEndian.PutUint32(rec[12:], uint32(len(frame)))
	p.b = append(append(p.b, rec...), frame...)
}

func sipMsg(first, callID, cseq string) []byte {
	return []byte(first + "\r\nVia: SIP/2.0/UDP 127.0.0.1\r\ni: " + callID + "\r\nCSeq: " + cseq + "\r\nContent-Length: 0\r\n\r\n")
}

func rtpPacket(seq uint16, ssrc uint32, pt byte) []byte {
	b := make([]byte, 12+160)
	b[0], b[1] = 0x80, pt
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	return b
}

func TestReadCapture(t *testing.T) {
	const sip, echo, caller = 5060, 6000, 40000
	ms := time.Millisecond
	p := newPcap()
	// Call a: INVITE at 0, 200 at 10 ms, BYE at 1 s answered. Call b:
	// INVITE at 100 ms (retransmitted at 600), 200 at 610 ms, BYE at 2 s,
	// never answered. Call c: refused 486.
	p.udp(0, caller, sip, sipMsg("INVITE sip:+84912345678@127.0.0.1 SIP/2.0", "a", "1 INVITE"))
	p.udp(10*ms, sip, caller, sipMsg("SIP/2.0 200 OK", "a", "1 INVITE"))
	p.udp(100*ms, caller, sip, sipMsg("INVITE sip:+84912345678@127.0.0.1 SIP/2.0", "b", "1 INVITE"))
	p.udp(600*ms, caller, sip, sipMsg("INVITE sip:+84912345678@127.0.0.1 SIP/2.0", "b", "1 INVITE"))
	p.udp(610*ms, sip, caller, sipMsg("SIP/2.0 200 OK", "b", "1 INVITE"))
	p.udp(700*ms, caller, sip, sipMsg("INVITE sip:+84912345678@127.0.0.1 SIP/2.0", "c", "1 INVITE"))
	p.udp(710*ms, sip, caller, sipMsg("SIP/2.0 486 Busy Here", "c", "1 INVITE"))
	p.udp(1000*ms, caller, sip, sipMsg("BYE sip:127.0.0.1 SIP/2.0", "a", "2 BYE"))
	p.udp(1001*ms, sip, caller, sipMsg("SIP/2.0 200 OK", "a", "2 BYE"))
	p.udp(2000*ms, caller, sip, sipMsg("BYE sip:127.0.0.1 SIP/2.0", "b", "2 BYE"))
	// RTP of two streams from one port (sipp's streamer): intervals of 20,
	// 20, 45 ms, a packet seen twice, a lost packet, and a DTMF event
	// that is not audio.
	for _, pk := range []struct {
		at   time.Duration
		seq  uint16
		ssrc uint32
		pt   byte
	}{
		{20 * ms, 1, 1, 0}, {40 * ms, 2, 1, 0}, {60 * ms, 3, 1, 0}, {60 * ms, 3, 1, 0}, {105 * ms, 4, 1, 0},
		{30 * ms, 7, 2, 8}, {50 * ms, 8, 2, 8}, {90 * ms, 10, 2, 8}, {95 * ms, 11, 2, 101},
	} {
		p.udp(pk.at, caller+2, echo, rtpPacket(pk.seq, pk.ssrc, pk.pt))
	}
	path := filepath.Join(t.TempDir(), "c.pcap")
	if err := os.WriteFile(path, p.b, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := readCapture(path, sip, echo)
	if err != nil {
		t.Fatal(err)
	}
	if w.Invited != 3 || w.Answered != 2 || w.Completed != 1 || w.Refused != 1 || w.PeakHeld != 2 {
		t.Errorf("calls: %+v", w)
	}
	// Two answered between the first INVITE (0) and the last 200 (610 ms).
	if rate := 2 / 0.610; w.SetupRate < rate-0.01 || w.SetupRate > rate+0.01 {
		t.Errorf("setup rate %.2f, want %.2f", w.SetupRate, rate)
	}
	if w.SetupP50 != 10*ms || w.SetupP99 != 510*ms {
		t.Errorf("setup p50 %v p99 %v, want 10ms and 510ms (from the first INVITE)", w.SetupP50, w.SetupP99)
	}
	if w.RTPStreams != 2 || w.RTPIntervals != 4 || w.RTPSeqGaps != 1 || w.RTPP50 != 20*ms || w.RTPP99 != 45*ms || w.RTPMax != 45*ms {
		t.Errorf("RTP: streams %d intervals %d gaps %d p50 %v p99 %v max %v", w.RTPStreams, w.RTPIntervals, w.RTPSeqGaps, w.RTPP50, w.RTPP99, w.RTPMax)
	}

	if _, err := readCapture(path+".missing", sip, echo); err == nil {
		t.Error("a missing file was read")
	}
	os.WriteFile(path, []byte(strings.Repeat("x", 40)), 0o644)
	if _, err := readCapture(path, sip, echo); err == nil || !strings.Contains(err.Error(), "pcap") {
		t.Errorf("not a pcap: %v", err)
	}
}

func TestSippCounter(t *testing.T) {
	screen := "  Successful call        |        0                  |        599               \n" +
		"  Failed call            |        1                  |        1                 \n"
	if ok, bad, none := sippCounter(screen, "Successful call"), sippCounter(screen, "Failed call"), sippCounter(screen, "Retransmissions"); ok != 599 || bad != 1 || none != -1 {
		t.Errorf("got %d %d %d", ok, bad, none)
	}
}

// dialbox's TTS engine in the SIP phase answers a WAV of the prompt's
// length at the phone rate.
func TestTTSTone(t *testing.T) {
	var out bytes.Buffer
	if err := runTTSTone([]string{"1500ms"}, &out); err != nil {
		t.Fatal(err)
	}
	b, err := audio.DecodeWAV(&out)
	if err != nil {
		t.Fatal(err)
	}
	if b.Rate != audio.PhoneRate || b.Duration() != 1500*time.Millisecond || audio.RMS(b.Samples) < 1000 {
		t.Errorf("got %d Hz, %v, RMS %.0f; want 8000 Hz, 1.5 s of tone", b.Rate, b.Duration(), audio.RMS(b.Samples))
	}
	for _, bad := range [][]string{nil, {"x"}, {"0s"}, {"2h"}} {
		if err := runTTSTone(bad, &out); err == nil {
			t.Errorf("tts-tone %q: no error", bad)
		}
	}
}

// The dialbox step counts ended calls from dialbox_calls_total, and
// goroutines from go_goroutines.
func TestEndedCallsFromMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE dialbox_calls_total counter\n"+
			"dialbox_calls_total{outcome=\"ANSWERED\"} 598\n"+
			"dialbox_calls_total{outcome=\"FAILED\"} 2\n"+
			"dialbox_calls_in_progress{tenant=\"bench-key\"} 0\n"+
			"# TYPE go_goroutines gauge\ngo_goroutines 3021\n")
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	m, err := dialboxMetrics(addr, buildRequest("GET", addr, "/metrics", "", nil))
	if err != nil || m.ended != 600 || m.outcomes["ANSWERED"] != 598 || m.outcomes["FAILED"] != 2 || len(m.outcomes) != 2 || m.goroutines != 3021 {
		t.Errorf("got %+v %v", m, err)
	}
}

// The RTP target holds both the p99 and the max: one late burst misses it.
func TestSIPTargetsJudgeRTPMax(t *testing.T) {
	for _, c := range []struct {
		p99, max time.Duration
		want     string
	}{
		{30 * time.Millisecond, 50 * time.Millisecond, "**PASS**"},
		{30 * time.Millisecond, 100 * time.Millisecond, "**MISS**"},
		{45 * time.Millisecond, 50 * time.Millisecond, "**MISS**"},
	} {
		h := &Harness{sip: []*SIPResult{{Key: "sip:dialbox", Calls: 600, Wire: sipWire{RTPIntervals: 1000, RTPStreams: 600, RTPP99: c.p99, RTPMax: c.max}}}}
		var line string
		for _, l := range h.sipTargets() {
			if strings.Contains(l, "RTP send interval") {
				line = l
			}
		}
		if !strings.HasPrefix(line, c.want) {
			t.Errorf("p99 %v, max %v: %q, want %s", c.p99, c.max, line, c.want)
		}
	}
}
