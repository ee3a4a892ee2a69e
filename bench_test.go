package main

// BenchmarkImport measures operation A end to end (HTTP, auth, validation,
// group commit with synchronous=FULL) and, in the same run on the same
// machine, what raw SQLite batch inserts reach, so the two can be compared:
//
//	go test -run '^$' -bench BenchmarkImport -benchtime 2000x .

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
)

const benchFixtures = `
[[applications]]
name = "Bench tenant"
api_key = "bench-key"
api_secret = "bench-secret"
  [[applications.hotline_pools]]
  key = "POOL_SYSTEM"
  numbers = ["02873000001"]
  [[applications.scenarios]]
  id = "sc-bench"
  status = "ACTIVE"
  content = "Xin chào {{danh_xung}} {{ho_ten}}"
  personalized_fields = ["danh_xung", "ho_ten"]
`

// benchPhone is the n-th of 40 million distinct valid VN mobile numbers, so
// no contact of the run is a duplicate of another.
func benchPhone(n int) string {
	prefixes := []string{"091", "096", "097", "098"}
	return fmt.Sprintf("%s%07d", prefixes[(n/10_000_000)%len(prefixes)], n%10_000_000)
}

func BenchmarkImport(b *testing.B) {
	const clients, perRequest = 32, 100
	s := startServer(b, benchFixtures)
	token := bearer(b, "bench-key", "bench-secret")
	target := s.url + opA("sc-bench")

	// Bodies are made before the clock starts: the client's work is not
	// the server's.
	bodies := make([]string, b.N)
	for i := range bodies {
		var sb strings.Builder
		sb.WriteString(`{"contacts":[`)
		for j := 0; j < perRequest; j++ {
			if j > 0 {
				sb.WriteByte(',')
			}
			fmt.Fprintf(&sb, `{"phone_number":"%s","danh_xung":"Anh","ho_ten":"Nguyen Van %d"}`, benchPhone(i*perRequest+j), j)
		}
		sb.WriteString(`]}`)
		bodies[i] = sb.String()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	var next atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				req, _ := http.NewRequest("POST", target, strings.NewReader(bodies[i]))
				req.Header.Set("Authorization", token)
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed", n, b.N)
	}
	b.ReportMetric(float64(b.N*perRequest)/elapsed.Seconds(), "contacts/s")

	// Check the work was really done: every contact is stored.
	if got := queryInt(b, s.m.store, `SELECT count(*) FROM contacts WHERE scenario_id = 'sc-bench'`); got != b.N*perRequest {
		b.Fatalf("%d contacts stored, want %d", got, b.N*perRequest)
	}
	b.ReportMetric(rawInsertRate(b, max(b.N*perRequest, 50_000)), "raw_rows/s")
}

// rawInsertRate inserts n rows into a simple table through modernc SQLite
// with dialbox's settings (WAL, synchronous=FULL), 1000 rows a transaction
// through one prepared statement: the ceiling of a durable insert here.
func rawInsertRate(b *testing.B, n int) float64 {
	b.Helper()
	path := filepath.Join(b.TempDir(), "raw.db")
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE raw (id TEXT PRIMARY KEY, phone TEXT NOT NULL, fields TEXT NOT NULL, created_at INTEGER NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	const batch = 1000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	start := time.Now()
	for done := 0; done < n; done += batch {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		stmt, err := tx.Prepare(`INSERT INTO raw (id, phone, fields, created_at) VALUES (?, ?, ?, ?)`)
		if err != nil {
			b.Fatal(err)
		}
		for i := done; i < min(done+batch, n); i++ {
			if _, err := stmt.Exec(ids[i], "+84"+benchPhone(i)[1:], `{"danh_xung":"Anh","ho_ten":"Nguyen Van A"}`, i); err != nil {
				b.Fatal(err)
			}
		}
		stmt.Close()
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkOneContact measures operation A with one contact a request, the
// case issue 23 holds to a ratio of WireMock, as a server on 127.0.0.1 with
// 64 keep-alive connections from a lean client in this process, logging as
// serve does (the access log batched): CPU and allocations a request, the
// writer's included (docs/benchmarks.md#operation-a-the-requests-side).
//
//	go test -run '^$' -bench BenchmarkOneContact -benchtime 100000x .
func BenchmarkOneContact(b *testing.B) {
	const clients = 64
	fx := writeFile(b, "fixtures.toml", benchFixtures+"    [applications.scenarios.call_config]\n    allow_duplicate_phone = true\n")
	m := startMain(b, io.Discard, []string{"--database", filepath.Join(filepath.Dir(fx), "dialbox.db"), "--fixtures", fx},
		[]string{"DIALBOX_ENGINE_ENABLED=false", "DIALBOX_LIMITS_RATE_PER_SECOND=0"},
		func(m *Main) { m.SetLogOutput(io.Discard) })
	b.Cleanup(func() { m.Close() })
	addr := strings.TrimPrefix(m.URL(), "http://")
	head := "POST " + opA("sc-bench") + " HTTP/1.1\r\nHost: " + addr + "\r\nAuthorization: " + bearer(b, "bench-key", "bench-secret") +
		"\r\nContent-Type: application/json\r\nContent-Length: "
	var next, failed atomic.Int64
	var wg sync.WaitGroup
	conns := make([]net.Conn, clients)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, start := cpuTime(), time.Now()
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := bufio.NewReader(c)
			var req, body []byte
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				body = append(append(append(body[:0], `{"contacts":[{"phone_number":"`...), benchPhone(i)...), `","danh_xung":"Anh","ho_ten":"Nguyen Van A"}]}`...)
				req = append(strconv.AppendInt(append(req[:0], head...), int64(len(body)), 10), "\r\n\r\n"...)
				if _, err := c.Write(append(req, body...)); err != nil {
					failed.Add(1)
					return
				}
				if !readOK(r) {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d requests failed", n, b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/req")
}

// readOK reads one answer of a keep-alive connection and says whether it
// was operation A's success.
func readOK(r *bufio.Reader) bool {
	status, err := r.ReadSlice('\n')
	ok := err == nil && bytes.HasPrefix(status, []byte("HTTP/1.1 200 "))
	n := -1
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return false
		}
		if len(line) <= 2 {
			break
		}
		if v, found := bytes.CutPrefix(line, []byte("Content-Length: ")); found {
			n, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
		}
	}
	if n < 0 {
		return false
	}
	body, err := r.Peek(n)
	ok = ok && err == nil && bytes.HasPrefix(body, []byte(`{"status":1,`))
	r.Discard(n)
	return ok
}

// cpuTime is the CPU this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
