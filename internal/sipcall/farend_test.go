package sipcall

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/audio"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

// The far end of the tests is a diago user agent on 127.0.0.1 playing the
// callee (or the trunk), one per test, on ports the system picks.

var quiet = slog.New(slog.DiscardHandler)

type farEnd struct {
	dg    *diago.Diago
	ports map[string]int
}

// newFarEnd starts a far end listening on UDP (and TCP when tcp) whose
// every call runs handle.
func newFarEnd(t *testing.T, tcp bool, handle func(d *diago.DialogServerSession)) *farEnd {
	t.Helper()
	ua, err := sipgo.NewUA(sipgo.WithUserAgent("farend"),
		sipgo.WithUserAgentTransportLayerOptions(sip.WithTransportLayerLogger(quiet)),
		sipgo.WithUserAgentTransactionLayerOptions(sip.WithTransactionLayerLogger(quiet)))
	if err != nil {
		t.Fatal(err)
	}
	networks := []string{"udp"}
	if tcp {
		networks = append(networks, "tcp")
	}
	opts := []diago.DiagoOption{diago.WithLogger(quiet)}
	for _, n := range networks {
		opts = append(opts, diago.WithTransport(diago.Transport{Transport: n, BindHost: "127.0.0.1"}))
	}
	dg := diago.NewDiago(ua, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); ua.Close() })
	if handle == nil {
		handle = func(*diago.DialogServerSession) {}
	}
	if err := dg.ServeBackground(ctx, handle); err != nil {
		t.Fatal(err)
	}
	if err := waitUDPListener(ua, "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	f := &farEnd{dg: dg, ports: map[string]int{}}
	for _, n := range networks {
		f.ports[n] = listenPort(t, ua, n)
	}
	return f
}

// listenPort is the port ua listens on for network. sipgo records it just
// after diago's ServeBackground has returned.
func listenPort(t *testing.T, ua *sipgo.UserAgent, network string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ports := ua.TransportLayer().ListenPorts(network); len(ports) > 0 {
			return ports[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s listener did not start", network)
		}
		time.Sleep(time.Millisecond)
	}
}

func (f *farEnd) trunk(network string) Trunk {
	return Trunk{Name: "pbx", Address: "127.0.0.1:" + strconv.Itoa(f.ports[network]), Transport: network}
}

// newTestUA starts our user agent with one trunk; edit adjusts its options.
func newTestUA(t *testing.T, tr Trunk, edit func(*Options)) *UserAgent {
	t.Helper()
	opts := Options{ListenAddr: "127.0.0.1:0", Trunks: []Trunk{tr}, Logger: quiet}
	if edit != nil {
		edit(&opts)
	}
	u, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { u.Close() })
	return u
}

// testCtx bounds a test that would otherwise hang on a bug.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// tone is ms milliseconds of a 440 Hz sine at 8 kHz as 16-bit PCM.
func tone(ms int) []byte {
	n := 8 * ms
	pcm := make([]byte, 2*n)
	for i := range n {
		s := int16(8000 * math.Sin(2*math.Pi*440*float64(i)/8000))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(s))
	}
	return pcm
}

// heard is the audio a far end received, decoded.
type heard struct {
	samples []int16
	codec   uint8
	packets int
}

func (h heard) duration() time.Duration {
	return time.Duration(len(h.samples)) * time.Second / 8000
}

func (h heard) rms() float64 {
	var sum float64
	for _, s := range h.samples {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(max(len(h.samples), 1)))
}

// listen decodes the G.711 audio d receives until the call's media closes
// (our BYE) or stop returns true; stop sees the packets read so far.
func listen(t *testing.T, d *diago.DialogServerSession, stop func(packets int) bool) heard {
	var h heard
	r, err := d.AudioReader()
	if err != nil {
		t.Error(err)
		return h
	}
	buf := make([]byte, media.RTPBufSize)
	pcm := make([]byte, 2*media.RTPBufSize)
	for stop == nil || !stop(h.packets) {
		n, err := r.Read(buf)
		if err != nil {
			return h
		}
		h.codec = d.RTPPacketReader.PacketHeader.PayloadType
		decode := audio.DecodeUlawTo
		switch h.codec {
		case media.CodecAudioAlaw.PayloadType:
			decode = audio.DecodeAlawTo
		case media.CodecAudioUlaw.PayloadType:
		default:
			continue
		}
		m, err := decode(pcm, buf[:n])
		if err != nil {
			t.Error(err)
			return h
		}
		for i := 0; i+1 < m; i += 2 {
			h.samples = append(h.samples, int16(binary.LittleEndian.Uint16(pcm[i:])))
		}
		h.packets++
	}
	return h
}

// sendSilence sends 20 ms G.711 silence from d until its media closes.
func sendSilence(d *diago.DialogServerSession) {
	w, err := d.AudioWriter()
	if err != nil {
		return
	}
	frame := bytes.Repeat([]byte{0xff}, 160) // μ-law (and near-silent A-law)
	for {
		if _, err := w.Write(frame); err != nil {
			return
		}
	}
}

// rtpAddrInSDP is the RTP address an SDP body offers.
func rtpAddrInSDP(t *testing.T, sdp []byte) *net.UDPAddr {
	var ip net.IP
	port := 0
	for _, line := range strings.Split(string(sdp), "\r\n") {
		if rest, ok := strings.CutPrefix(line, "c=IN IP4 "); ok {
			ip = net.ParseIP(rest)
		}
		if rest, ok := strings.CutPrefix(line, "m=audio "); ok {
			port, _ = strconv.Atoi(strings.Fields(rest)[0])
		}
	}
	if ip == nil || port == 0 {
		t.Fatalf("no RTP address in SDP:\n%s", sdp)
	}
	return &net.UDPAddr{IP: ip, Port: port}
}
