package proxy

import (
	"net/http"
	"testing"
)

func TestClientAddrAndHTTPS(t *testing.T) {
	trusted, err := Parse([]string{"127.0.0.1", "10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		remote, forwardedFor, proto string
		want                        string
		https                       bool
	}{
		{"192.0.2.1:5000", "", "", "192.0.2.1", false},
		{"192.0.2.1:5000", "198.51.100.7", "https", "192.0.2.1", false}, // not a proxy: its own word
		{"127.0.0.1:5000", "", "", "127.0.0.1", false},
		{"127.0.0.1:5000", "198.51.100.7", "https", "198.51.100.7", true},
		{"127.0.0.1:5000", "203.0.113.9, 198.51.100.7", "http", "198.51.100.7", false}, // the first is the client's word
		{"127.0.0.1:5000", "198.51.100.7, 10.1.2.3", "https", "198.51.100.7", true},    // through two proxies
		{"127.0.0.1:5000", "10.1.2.3", "", "10.1.2.3", false},
		{"127.0.0.1:5000", "nonsense, 10.1.2.3", "", "10.1.2.3", false},
		{"127.0.0.1:5000", "198.51.100.7", "https, http", "198.51.100.7", false}, // the nearest proxy speaks last
		{"[::ffff:127.0.0.1]:5000", "2001:db8::1", "HTTPS", "2001:db8::1", true},
	} {
		r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
		if tc.forwardedFor != "" {
			r.Header.Set("X-Forwarded-For", tc.forwardedFor)
		}
		if tc.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		if got := trusted.ClientAddr(r); got != tc.want {
			t.Errorf("%s forwarding %q: client %s, want %s", tc.remote, tc.forwardedFor, got, tc.want)
		}
		if got := trusted.HTTPS(r); got != tc.https {
			t.Errorf("%s forwarding proto %q: HTTPS %v, want %v", tc.remote, tc.proto, got, tc.https)
		}
	}
	if (Trusted{}).ClientAddr(&http.Request{RemoteAddr: "127.0.0.1:1", Header: http.Header{"X-Forwarded-For": {"198.51.100.7"}}}) != "127.0.0.1" {
		t.Error("no trusted proxies, and X-Forwarded-For was believed")
	}
	if _, err := Parse([]string{"10.0.0.0/33"}); err == nil {
		t.Error("a bad network was taken")
	}
}
