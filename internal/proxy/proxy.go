// Package proxy owns what dialbox believes about a request's client when
// reverse proxies stand in front of it: the client's address and whether
// it spoke HTTPS. A proxy's X-Forwarded-For and X-Forwarded-Proto are
// believed only when the connection comes from one of http.trusted_proxies
// (docs/configuration.md); from anyone else they are the client's own
// word, and ignored.
package proxy

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Trusted is the set of proxies whose forwarding headers are believed.
// The zero value trusts none.
type Trusted struct {
	prefixes []netip.Prefix
}

// Parse reads addresses ("10.0.0.5", "::1") and networks ("10.0.0.0/8").
func Parse(list []string) (Trusted, error) {
	var t Trusted
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" { // an empty DIALBOX_HTTP_TRUSTED_PROXIES names none
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			t.prefixes = append(t.prefixes, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return Trusted{}, fmt.Errorf("%q is not an address like \"10.0.0.5\" or a network like \"10.0.0.0/8\"", s)
		}
		t.prefixes = append(t.prefixes, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return t, nil
}

func (t Trusted) trusts(addr string) bool {
	a, err := netip.ParseAddr(strings.TrimSpace(addr))
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range t.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peer is the address of the connection's other end, without its port.
func peer(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// ClientAddr is the address of the client: the connection's, or, from a
// trusted proxy, the last address of X-Forwarded-For that is not a trusted
// proxy itself. Each proxy appends the address it was reached from, so the
// addresses left of that one are the client's own word and skipped.
func (t Trusted) ClientAddr(r *http.Request) string {
	addr := peer(r)
	if !t.trusts(addr) {
		return addr
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		if hop == "" {
			continue
		}
		if _, err := netip.ParseAddr(hop); err != nil {
			return addr // a hop that is no address: stop at the last proxy known
		}
		if !t.trusts(hop) {
			return hop
		}
		addr = hop
	}
	return addr
}

// HTTPS reports whether the client spoke HTTPS: to dialbox itself, or to a
// trusted proxy that says so in X-Forwarded-Proto.
func (t Trusted) HTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if !t.trusts(peer(r)) {
		return false
	}
	// The proxy nearest dialbox speaks last.
	protos := strings.Split(strings.Join(r.Header.Values("X-Forwarded-Proto"), ","), ",")
	return strings.EqualFold(strings.TrimSpace(protos[len(protos)-1]), "https")
}
