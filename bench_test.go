package main

// BenchmarkImport measures operation A end to end (HTTP, auth, validation,
// group commit with synchronous=FULL) and, in the same run on the same
// machine, what raw SQLite batch inserts reach, so the two can be compared:
//
//	go test -run '^$' -bench BenchmarkImport -benchtime 2000x .

import (
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
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
