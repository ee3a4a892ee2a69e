package testtool

import (
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// BaresipAddr is a loopback address for baresip's sip_listen: baresip
// binds its port for UDP and TCP and the next one for TLS, so all three
// must be free. The port is drawn below the system's ephemeral range,
// where no outgoing connection of another test can take it meanwhile.
func BaresipAddr(t testing.TB) string {
	t.Helper()
	for range 200 {
		port := 20000 + rand.IntN(12000)
		var held []io.Closer
		free := true
		for _, try := range []struct {
			network string
			port    int
		}{{"udp", port}, {"tcp", port}, {"tcp", port + 1}} {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(try.port))
			var c io.Closer
			var err error
			if try.network == "udp" {
				c, err = net.ListenPacket("udp", addr)
			} else {
				c, err = net.Listen("tcp", addr)
			}
			if err != nil {
				free = false
				break
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
		if free {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
	}
	t.Fatal("no free port for baresip")
	return ""
}
