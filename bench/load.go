package main

// The load generator: a lean HTTP/1.1 keep-alive client over raw TCP, so the
// client spends as little as possible of the machine's two cores and every
// server under test is driven the same way. Each worker owns one connection
// and sends prebuilt requests back to back (a closed loop: concurrency N
// means N requests in flight). Every run is bounded in time and in count,
// and only loopback addresses are accepted.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Target is what one load run sends.
type Target struct {
	Addr string // host:port on loopback
	// Addrs, when set, are several servers instead of Addr: each worker
	// keeps a connection to each and sends its requests to them in turn
	// (round-robin per request, as a load balancer spreads them).
	Addrs []string
	Reqs  [][]byte // full prebuilt requests; worker w sends Reqs[(w+i) % len]
	// Check judges a response: units is what it counts for the run (contacts
	// acknowledged for operation A, 1 for a good response elsewhere), ok
	// false makes it an error.
	Check func(status int, body []byte) (units int, ok bool)
}

// Result is one load run's outcome.
type Result struct {
	Conc     int
	Elapsed  time.Duration
	OK       int64 // good responses
	Errors   int64
	Units    int64 // sum of Check units over good responses
	P50, P99 time.Duration
	ErrMsg   string // first error seen, for the report
}

func (r Result) ReqPerSec() float64  { return float64(r.OK) / r.Elapsed.Seconds() }
func (r Result) UnitPerSec() float64 { return float64(r.Units) / r.Elapsed.Seconds() }

// maxLatencySamples bounds the latency memory of one run.
const maxLatencySamples = 4 << 20

// Run drives t with conc connections for at most dur and at most maxReqs
// requests, whichever ends first.
func Run(t Target, conc int, dur time.Duration, maxReqs int64) (Result, error) {
	addrs := t.Addrs
	if len(addrs) == 0 {
		addrs = []string{t.Addr}
	}
	for _, a := range addrs {
		if err := checkLoopback(a); err != nil {
			return Result{}, err
		}
	}
	if len(t.Reqs) == 0 || conc < 1 {
		return Result{}, errors.New("load: nothing to send")
	}
	var (
		sent     atomic.Int64
		ok, bad  atomic.Int64
		units    atomic.Int64
		firstErr atomic.Value
		wg       sync.WaitGroup
	)
	lats := make([][]time.Duration, conc)
	perWorker := maxLatencySamples / conc
	start := time.Now()
	deadline := start.Add(dur)
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			conns := make([]*clientConn, len(addrs))
			defer func() {
				for _, c := range conns {
					if c != nil {
						c.Close()
					}
				}
			}()
			lat := make([]time.Duration, 0, min(perWorker, 1<<16))
			fail := func(k int, err error) {
				bad.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				if conns[k] != nil {
					conns[k].Close()
					conns[k] = nil
				}
			}
			for i := 0; ; i++ {
				if sent.Add(1) > maxReqs {
					break
				}
				now := time.Now()
				if now.After(deadline) {
					break
				}
				k := (w + i) % len(addrs)
				if conns[k] == nil {
					var err error
					if conns[k], err = dialClient(addrs[k]); err != nil {
						fail(k, err)
						time.Sleep(10 * time.Millisecond)
						continue
					}
				}
				req := t.Reqs[(w+i)%len(t.Reqs)]
				t0 := time.Now()
				status, body, closeAfter, err := conns[k].Do(req)
				d := time.Since(t0)
				if err != nil {
					fail(k, err)
					continue
				}
				u, good := t.Check(status, body)
				if !good {
					fail(k, fmt.Errorf("HTTP %d: %.200s", status, body))
				} else {
					ok.Add(1)
					units.Add(int64(u))
					if len(lat) < perWorker {
						lat = append(lat, d)
					}
				}
				if closeAfter && conns[k] != nil {
					conns[k].Close()
					conns[k] = nil
				}
			}
			lats[w] = lat
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	slices.Sort(all)
	r := Result{Conc: conc, Elapsed: elapsed, OK: ok.Load(), Errors: bad.Load(), Units: units.Load()}
	if len(all) > 0 {
		r.P50 = all[len(all)*50/100]
		r.P99 = all[min(len(all)-1, len(all)*99/100)]
	}
	if v := firstErr.Load(); v != nil {
		r.ErrMsg = v.(string)
	}
	return r, nil
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("load: %s is not a loopback address; the harness only loads 127.0.0.1", addr)
	}
	return nil
}

// clientConn is one keep-alive HTTP/1.1 connection.
type clientConn struct {
	c    net.Conn
	br   *bufio.Reader
	body []byte
}

func dialClient(addr string) (*clientConn, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &clientConn{c: c, br: bufio.NewReaderSize(c, 64<<10)}, nil
}

func (c *clientConn) Close() { c.c.Close() }

const ioTimeout = 60 * time.Second

// Do sends one request and reads its response. The body slice is reused by
// the next call.
func (c *clientConn) Do(req []byte) (status int, body []byte, closeAfter bool, err error) {
	c.c.SetDeadline(time.Now().Add(ioTimeout))
	if _, err = c.c.Write(req); err != nil {
		return
	}
	return c.readResponse()
}

func (c *clientConn) readResponse() (status int, body []byte, closeAfter bool, err error) {
	line, err := c.readLine()
	if err != nil {
		return
	}
	// HTTP/1.1 200 OK
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, true, fmt.Errorf("bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, nil, true, fmt.Errorf("bad status line %q", line)
	}
	if line[7] == '0' {
		closeAfter = true // HTTP/1.0 closes unless told otherwise
	}
	length, chunked := -1, false
	for {
		line, err = c.readLine()
		if err != nil {
			return
		}
		if len(line) == 0 {
			break
		}
		k, v, found := bytes.Cut(line, []byte(":"))
		if !found {
			continue
		}
		v = bytes.TrimSpace(v)
		switch {
		case asciiEqualFold(k, "content-length"):
			if length, err = strconv.Atoi(string(v)); err != nil {
				return 0, nil, true, fmt.Errorf("bad Content-Length %q", v)
			}
		case asciiEqualFold(k, "transfer-encoding"):
			chunked = bytes.Contains(bytes.ToLower(v), []byte("chunked"))
		case asciiEqualFold(k, "connection"):
			lv := bytes.ToLower(v)
			if bytes.Contains(lv, []byte("close")) {
				closeAfter = true
			} else if bytes.Contains(lv, []byte("keep-alive")) {
				closeAfter = false
			}
		}
	}
	c.body = c.body[:0]
	switch {
	case chunked:
		for {
			line, err = c.readLine()
			if err != nil {
				return
			}
			if i := bytes.IndexByte(line, ';'); i >= 0 {
				line = line[:i]
			}
			n, perr := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
			if perr != nil {
				return 0, nil, true, fmt.Errorf("bad chunk size %q", line)
			}
			if n == 0 {
				for { // trailers
					line, err = c.readLine()
					if err != nil || len(line) == 0 {
						break
					}
				}
				break
			}
			if err = c.readBody(int(n)); err != nil {
				return
			}
			if _, err = c.readLine(); err != nil {
				return
			}
		}
	case length >= 0:
		err = c.readBody(length)
	default:
		// No length: the body runs to the end of the connection.
		var b bytes.Buffer
		_, err = io.Copy(&b, c.br)
		c.body = b.Bytes()
		closeAfter = true
	}
	return status, c.body, closeAfter, err
}

func (c *clientConn) readBody(n int) error {
	start := len(c.body)
	c.body = slices.Grow(c.body, n)[:start+n]
	_, err := io.ReadFull(c.br, c.body[start:])
	return err
}

func (c *clientConn) readLine() ([]byte, error) {
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("header line too long")
		}
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// buildRequest makes one HTTP/1.1 request's bytes.
func buildRequest(method, addr, path, token string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: dialbox-bench\r\nAccept: application/json\r\n", method, path, addr)
	if token != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", token)
	}
	if body != nil {
		fmt.Fprintf(&b, "Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}
