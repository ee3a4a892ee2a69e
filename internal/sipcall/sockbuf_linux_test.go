//go:build linux

package sipcall

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/emiago/diago"
	"github.com/emiago/sipgo/sip"
)

// grownSize is the SO_RCVBUF a socket has after growReadBuffer: Linux caps
// the request at net.core.rmem_max and doubles it. The test is skipped
// where that is no more than a socket gets anyway.
func grownSize(t *testing.T) int {
	t.Helper()
	sysctl := func(name string) int {
		b, err := os.ReadFile("/proc/sys/net/core/" + name)
		if err != nil {
			t.Skip(err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Skip(err)
		}
		return n
	}
	want := 2 * min(sipReadBuffer, sysctl("rmem_max"))
	if want <= sysctl("rmem_default") {
		t.Skipf("net.core.rmem_max lets no socket grow past the default")
	}
	return want
}

// readBuffer is the SO_RCVBUF of the UDP socket sipgo holds for addr.
func readBuffer(t *testing.T, u *UserAgent, addr string) int {
	t.Helper()
	c, err := u.ua.TransportLayer().GetConnection("udp", addr)
	if err != nil {
		t.Fatalf("no UDP connection for %s: %v", addr, err)
	}
	defer c.Ref(-1)
	raw, err := c.(*sip.UDPConnection).PacketConn.(*net.UDPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		size, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	}); err != nil || serr != nil {
		t.Fatal(err, serr)
	}
	return size
}

// A burst of call set-ups overflowed the default receive buffer of the
// socket SIP responses arrive on: 180s and 200s were dropped by the kernel.
// The listener (which sends and receives when bound to an IP) is grown.
func TestListenerReadBufferGrown(t *testing.T) {
	t.Parallel()
	want := grownSize(t)
	u := newTestUA(t, Trunk{Name: "pbx", Address: "127.0.0.1:5060"}, nil)
	addr := "127.0.0.1:" + strconv.Itoa(listenPort(t, u.ua, "udp"))
	if got := readBuffer(t, u, addr); got != want {
		t.Errorf("listener SO_RCVBUF %d, want %d", got, want)
	}
}

// Listening on 0.0.0.0, requests to a trunk go out from a socket of their
// own, where the responses come back: it is grown on the first response.
func TestTrunkSocketReadBufferGrown(t *testing.T) {
	t.Parallel()
	want := grownSize(t)
	fe := newFarEnd(t, false, func(d *diago.DialogServerSession) {
		d.Respond(sip.StatusBusyHere, "Busy Here", nil)
	})
	u := newTestUA(t, fe.trunk("udp"), func(o *Options) { o.ListenAddr = "0.0.0.0:0" })
	checkEnd(t, call(u, testCtx(t), nil, nil), false, EndCallee, 486, OutcomeBusy)
	if got := readBuffer(t, u, fe.trunk("udp").Address); got != want {
		t.Errorf("trunk socket SO_RCVBUF %d, want %d", got, want)
	}
}
