package sipcall

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	pcm "dialbox/internal/audio"
	"dialbox/internal/sipcall/sipcalltest"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo"
)

// The far end of the tests is a diago user agent on 127.0.0.1 playing the
// callee (or the trunk), one per test, on ports the system picks.

var quiet = slog.New(slog.DiscardHandler)

// farEnd is sipcalltest's far end, shared with dialbox's engine tests.
type farEnd struct {
	dg    *diago.Diago
	ports map[string]int
}

// newFarEnd starts a far end listening on UDP (and TCP when tcp) whose
// every call runs handle.
func newFarEnd(t *testing.T, tcp bool, handle func(d *diago.DialogServerSession)) *farEnd {
	f := sipcalltest.NewFarEnd(t, tcp, handle)
	return &farEnd{dg: f.DG, ports: f.Ports}
}

// listenPort is the port ua listens on for network.
func listenPort(t *testing.T, ua *sipgo.UserAgent, network string) int {
	return sipcalltest.ListenPort(t, ua, network)
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

// tone is ms milliseconds of a 440 Hz sine at 8 kHz, as samples.
func tone(ms int) []int16 {
	samples, err := pcm.DecodePCM16(sipcalltest.Tone(ms))
	if err != nil {
		panic(err)
	}
	return samples
}

// heard is the audio a far end received, decoded.
type heard = sipcalltest.Heard

// listen decodes the G.711 audio d receives until the call's media closes
// (our BYE) or stop returns true.
func listen(t *testing.T, d *diago.DialogServerSession, stop func(packets int) bool) heard {
	return sipcalltest.Listen(t, d, stop)
}

// sendSilence sends 20 ms G.711 silence from d until its media closes.
func sendSilence(d *diago.DialogServerSession) { sipcalltest.SendSilence(d) }

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
