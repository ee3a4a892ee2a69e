// Package sipcalltest is the far end of tests that place real calls: a
// diago user agent on 127.0.0.1, playing the callee (or the trunk), that
// decodes the audio it hears. internal/sipcall's tests and dialbox's engine
// tests share it.
package sipcalltest

import (
	"bytes"
	"context"
	"encoding/binary"
	"log/slog"
	"math"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/emiago/diago"
	"github.com/emiago/diago/audio"
	"github.com/emiago/diago/media"
	"github.com/emiago/sipgo"
	"github.com/emiago/sipgo/sip"
)

var quiet = slog.New(slog.DiscardHandler)

// FarEnd is a user agent answering calls on 127.0.0.1.
type FarEnd struct {
	DG *diago.Diago
	// Ports are the ports it listens on, by network ("udp", "tcp").
	Ports map[string]int
}

// NewFarEnd starts a far end listening on UDP (and TCP when tcp) on ports
// the system picks, whose every call runs handle (nil: none is answered).
// It stops when the test ends.
func NewFarEnd(t testing.TB, tcp bool, handle func(d *diago.DialogServerSession)) *FarEnd {
	t.Helper()
	return NewRegistrarFarEnd(t, tcp, nil, handle)
}

// NewRegistrarFarEnd is NewFarEnd answering REGISTER with reg too (nil:
// with 405, as diago does).
func NewRegistrarFarEnd(t testing.TB, tcp bool, reg *Registrar, handle func(d *diago.DialogServerSession)) *FarEnd {
	t.Helper()
	return newFarEnd(t, tcp, reg, nil, handle)
}

// NewFarEndAnnouncing is NewFarEnd (UDP) whose SDP gives sdpIP as its RTP
// address while it sends RTP from 127.0.0.1, as a host with several
// addresses may.
func NewFarEndAnnouncing(t testing.TB, sdpIP net.IP, handle func(d *diago.DialogServerSession)) *FarEnd {
	t.Helper()
	return newFarEnd(t, false, nil, sdpIP, handle)
}

func newFarEnd(t testing.TB, tcp bool, reg *Registrar, sdpIP net.IP, handle func(d *diago.DialogServerSession)) *FarEnd {
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
	if reg != nil {
		srv, err := sipgo.NewServer(ua, sipgo.WithServerLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		srv.OnRegister(reg.handle)
		opts = append(opts, diago.WithServer(srv))
	}
	for _, n := range networks {
		opts = append(opts, diago.WithTransport(diago.Transport{Transport: n, BindHost: "127.0.0.1", MediaExternalIP: sdpIP}))
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
	f := &FarEnd{DG: dg, Ports: map[string]int{}}
	for _, n := range networks {
		f.Ports[n] = ListenPort(t, ua, n)
	}
	// Requests go out from the listener's socket once sipgo has it.
	waitConnection(t, ua, f.Ports["udp"])
	return f
}

// Address is the far end's host:port for network.
func (f *FarEnd) Address(network string) string {
	return "127.0.0.1:" + strconv.Itoa(f.Ports[network])
}

// ListenPort is the port ua listens on for network. sipgo records it just
// after diago's ServeBackground has returned.
func ListenPort(t testing.TB, ua *sipgo.UserAgent, network string) int {
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

func waitConnection(t testing.TB, ua *sipgo.UserAgent, port int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if c, err := ua.TransportLayer().GetConnection("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err == nil {
			c.Ref(-1) // GetConnection took a reference
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("UDP listener did not start")
		}
		time.Sleep(time.Millisecond)
	}
}

// Tone is ms milliseconds of a 440 Hz sine at 8 kHz as 16-bit PCM.
func Tone(ms int) []byte { return ToneAt(440, ms) }

// ToneAt is ms milliseconds of a sine of freq Hz at 8 kHz as 16-bit PCM.
func ToneAt(freq float64, ms int) []byte {
	n := 8 * ms
	pcm := make([]byte, 2*n)
	for i := range n {
		s := int16(8000 * math.Sin(2*math.Pi*freq*float64(i)/8000))
		binary.LittleEndian.PutUint16(pcm[2*i:], uint16(s))
	}
	return pcm
}

// Heard is the audio a far end received, decoded.
type Heard struct {
	Samples []int16
	Codec   uint8
	Packets int
}

// Duration is how long the audio heard plays.
func (h Heard) Duration() time.Duration {
	return time.Duration(len(h.Samples)) * time.Second / 8000
}

// RMS is the audio's root mean square, in sample units.
func (h Heard) RMS() float64 {
	var sum float64
	for _, s := range h.Samples {
		sum += float64(s) * float64(s)
	}
	return math.Sqrt(sum / float64(max(len(h.Samples), 1)))
}

// Listen decodes the G.711 audio d receives until the call's media closes
// (the caller's BYE) or stop returns true; stop sees the packets read so
// far.
func Listen(t testing.TB, d *diago.DialogServerSession, stop func(packets int) bool) Heard {
	var h Heard
	r, err := d.AudioReader()
	if err != nil {
		t.Error(err)
		return h
	}
	buf := make([]byte, media.RTPBufSize)
	pcm := make([]byte, 2*media.RTPBufSize)
	for stop == nil || !stop(h.Packets) {
		n, err := r.Read(buf)
		if err != nil {
			return h
		}
		h.Codec = d.RTPPacketReader.PacketHeader.PayloadType
		decode := audio.DecodeUlawTo
		switch h.Codec {
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
			h.Samples = append(h.Samples, int16(binary.LittleEndian.Uint16(pcm[i:])))
		}
		h.Packets++
	}
	return h
}

// SendSilence sends 20 ms G.711 silence from d until its media closes.
func SendSilence(d *diago.DialogServerSession) {
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
