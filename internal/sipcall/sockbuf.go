package sipcall

import (
	"net"
	"strings"

	"github.com/emiago/sipgo/sip"
)

// sipReadBuffer is the receive buffer asked for on the UDP socket SIP
// responses arrive on. sipgo reads it with one goroutine; at hundreds of
// calls a second, a moment without CPU for that goroutine overflows the
// system's default (212 KB on Linux, some 150 datagrams of SIP) and the
// kernel drops 180s and 200s: the INVITE goes out again, and a far end
// that has already answered may give the call up. 4 MB holds a second of
// call set-up at 1,500 calls/s; Linux caps it at net.core.rmem_max.
const sipReadBuffer = 4 << 20

// growReadBuffer raises the receive buffer of a sipgo UDP connection; a
// connection of another kind is left alone.
func growReadBuffer(c sip.Connection) error {
	uc, ok := c.(*sip.UDPConnection)
	if !ok {
		return nil
	}
	conn, ok := uc.PacketConn.(*net.UDPConn)
	if !ok {
		return nil
	}
	return conn.SetReadBuffer(sipReadBuffer)
}

// growSocketOf grows the socket a response came in on, once per source.
// With an unspecified listen address (0.0.0.0), diago sends a trunk's
// requests from a socket of their own, opened by the first INVITE, and the
// responses come back there, not to the listener.
func (u *UserAgent) growSocketOf(r *sip.Response) {
	src := r.Source()
	if !strings.EqualFold(r.Transport(), "udp") || src == "" {
		return
	}
	if _, done := u.grown.LoadOrStore(src, true); done {
		return
	}
	c, err := u.ua.TransportLayer().GetConnection("udp", src)
	if err != nil {
		return
	}
	defer c.Ref(-1) // GetConnection took a reference
	if err := growReadBuffer(c); err != nil {
		u.log.Warn("sipcall: cannot grow the SIP socket's receive buffer", "source", src, "err", err)
	}
}
