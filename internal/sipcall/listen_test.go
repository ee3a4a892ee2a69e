package sipcall

import (
	"dialbox/internal/testtool"
	"errors"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// optionsTo sends an OPTIONS to addr from a socket of its own and says
// whether something listens there: false when the kernel refuses the
// datagram (at once, on loopback). An answer from another address than
// addr (a socket on every interface answers from 127.0.0.1) never reaches
// this connected socket: the deadline then says something took it.
func optionsTo(t *testing.T, addr *net.UDPAddr) bool {
	t.Helper()
	c, err := net.DialUDP("udp", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	answer, err := sendOptions(t, c, addr, "listen-test")
	if errors.Is(err, syscall.ECONNREFUSED) {
		return false
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	if err != nil || !strings.HasPrefix(answer, "SIP/2.0 ") {
		t.Fatalf("OPTIONS to %s: %v %q", addr, err, answer)
	}
	return true
}

// sendOptions sends an OPTIONS to addr on c and reads the answer, waiting
// 10 s at most.
func sendOptions(t *testing.T, c *net.UDPConn, addr net.Addr, callID string) (string, error) {
	t.Helper()
	options := "OPTIONS sip:dialbox@" + addr.String() + " SIP/2.0\r\n" +
		"Via: SIP/2.0/UDP " + c.LocalAddr().String() + ";branch=z9hG4bK-" + callID + "\r\n" +
		"From: <sip:probe@127.0.0.1>;tag=1\r\nTo: <sip:dialbox@127.0.0.1>\r\nCall-ID: " + callID + "\r\n" +
		"CSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n"
	if _, err := c.Write([]byte(options)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 65535)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

// TestListenWhereTheTrunksAre: a listen address without a host binds the
// address the trunks are reached from, not every interface: with the trunk
// on 127.0.0.1, SIP sent to 127.0.0.2 (loopback too) finds nobody.
func TestListenWhereTheTrunksAre(t *testing.T) {
	u := newTestUA(t, Trunk{Name: "pbx", Address: "127.0.0.1:5999"}, func(o *Options) { o.ListenAddr = ":0" })
	port := listenPort(t, u.ua, "udp")
	if !optionsTo(t, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}) {
		t.Fatal("nothing listens on 127.0.0.1, the address the trunk is reached from")
	}
	if optionsTo(t, &net.UDPAddr{IP: net.IPv4(127, 0, 0, 2), Port: port}) {
		t.Error("SIP answered on 127.0.0.2: the user agent listens on every interface")
	}
	if got, want := u.ListenAddr(), "127.0.0.1:"+strconv.Itoa(port); got != want {
		t.Errorf("ListenAddr %s, want %s", got, want)
	}
}

// TestListenEverywhereWhenTrunksDisagree: trunks reached from two local
// addresses leave no one address to listen on: every interface, and a
// warning that says why.
func TestListenEverywhereWhenTrunksDisagree(t *testing.T) {
	var out testtool.LockedBuffer
	u, err := New(Options{ListenAddr: ":0", Logger: slog.New(slog.NewTextHandler(&out, nil)),
		Trunks: []Trunk{{Name: "a", Address: "127.0.0.1:5999"}, {Name: "b", Address: "[::1]:5999"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if !strings.Contains(out.String(), "listening on every interface") {
		t.Errorf("no warning:\n%s", out.String())
	}
	if got, want := u.ListenAddr(), "0.0.0.0:"+strconv.Itoa(listenPort(t, u.ua, "udp")); got != want {
		t.Errorf("listening on %s, want %s", got, want)
	}
}
