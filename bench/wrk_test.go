package main

import (
	"testing"
	"time"
)

// A real wrk 4.1 output with --latency, non-2xx answers and socket errors.
const wrkSample = `Running 5s test @ http://127.0.0.1:40775/api/v1/public-api/scenarios
  2 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     2.41ms    2.76ms  23.03ms   84.15%
    Req/Sec    19.48k     1.20k   22.10k    70.00%
  Latency Distribution
     50%    1.20ms
     75%    2.88ms
     90%    5.70ms
     99%   12.44ms
  194110 requests in 5.01s, 1.18GB read
  Socket errors: connect 0, read 3, write 0, timeout 7
  Non-2xx or 3xx responses: 100
Requests/sec:  38754.14
Transfer/sec:    236.08MB
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk(wrkSample, 64)
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors != 110 || r.OK != 194000 || r.Elapsed != 5010*time.Millisecond ||
		r.P50 != 1200*time.Microsecond || r.P99 != 12440*time.Microsecond {
		t.Errorf("parsed %+v", r)
	}
	if _, err := parseWrk("unable to connect to 127.0.0.1:1 Connection refused", 64); err == nil {
		t.Error("an output without a request count was accepted")
	}
}

func TestLuaString(t *testing.T) {
	for in, want := range map[string]string{`{"a":1}`: `[[{"a":1}]]`, `x]]y`: `[=[x]]y]=]`, `]=]]]`: `[==[]=]]]]==]`} {
		if got := luaString([]byte(in)); got != want {
			t.Errorf("luaString(%q) = %s, want %s", in, got, want)
		}
	}
}
