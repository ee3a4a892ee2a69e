package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Several servers: every one gets its share of the requests, in turn.
func TestRunRoundRobin(t *testing.T) {
	var counts [3]atomic.Int64
	var addrs []string
	for i := range counts {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			counts[i].Add(1)
			w.Write([]byte("ok"))
		}))
		defer srv.Close()
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	req := buildRequest("GET", addrs[0], "/", "", nil)
	const total = 300
	r, err := Run(Target{Addrs: addrs, Reqs: [][]byte{req}, Check: func(s int, _ []byte) (int, bool) { return 1, s == 200 }},
		4, time.Minute, total)
	if err != nil {
		t.Fatal(err)
	}
	if r.OK != total || r.Errors != 0 {
		t.Fatalf("%d answered, %d errors (%s); want %d answered", r.OK, r.Errors, r.ErrMsg, total)
	}
	for i := range counts {
		// Each of the 4 workers turns through the servers; where they stop
		// may differ by one request each.
		if n := counts[i].Load(); n < total/3-4 || n > total/3+4 {
			t.Errorf("server %d got %d requests, want %d±4 (round-robin over 3)", i, n, total/3)
		}
	}
}
