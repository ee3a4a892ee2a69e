package store

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"
)

// stmtCounts are the writer's statement cache counters.
type stmtCounts struct{ hits, misses, prepared, evictions int }

func stmtCountsOf(s *SQLite) stmtCounts {
	m := s.metrics.stmts
	return stmtCounts{int(testutil.ToFloat64(m.hits)), int(testutil.ToFloat64(m.misses)),
		int(testutil.ToFloat64(m.prepared)), int(testutil.ToFloat64(m.evictions))}
}

func (a stmtCounts) minus(b stmtCounts) stmtCounts {
	return stmtCounts{a.hits - b.hits, a.misses - b.misses, a.prepared - b.prepared, a.evictions - b.evictions}
}

// TestWriterPreparesStatementsSeenTwice: a statement the writer runs twice
// is prepared once, after its commit, and runs prepared from then on; one
// run once is not prepared; texts that vary (a list's length) never hold
// more than stmtCacheSize statements, the oldest given back.
func TestWriterPreparesStatementsSeenTwice(t *testing.T) {
	s := openSQLiteAt(t, filepath.Join(t.TempDir(), "dialbox.db"))
	ctx := context.Background()
	write := func(queries ...string) {
		t.Helper()
		if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
			for i, q := range queries {
				if _, err := tx.ExecContext(ctx, q, i); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
		_, err := tx.ExecContext(ctx, `CREATE TABLE t (n INTEGER)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const insert = `INSERT INTO t (n) VALUES (?)`

	before := stmtCountsOf(s)
	write(insert, insert)
	if got := stmtCountsOf(s).minus(before); got != (stmtCounts{misses: 2, prepared: 1}) {
		t.Errorf("a statement run twice: %+v, want 2 misses and 1 prepared", got)
	}
	before = stmtCountsOf(s)
	write(insert, insert, insert)
	if got := stmtCountsOf(s).minus(before); got != (stmtCounts{hits: 3}) {
		t.Errorf("the same statement in the next commit: %+v, want 3 hits", got)
	}
	if n := countSQLite(t, s, `SELECT count(*) FROM t`); n != 5 {
		t.Errorf("%d rows stored, want 5", n)
	}

	before = stmtCountsOf(s)
	write(`INSERT INTO t (n) VALUES (? + 1)`)
	if got := stmtCountsOf(s).minus(before); got != (stmtCounts{misses: 1}) {
		t.Errorf("a statement run once: %+v, want 1 miss and nothing prepared", got)
	}

	// As an IN list or a multi-row VALUES does, each length its own text.
	before = stmtCountsOf(s)
	const lengths = stmtCacheSize + 40
	for k := 1; k <= lengths; k++ {
		q := `UPDATE t SET n = n WHERE n IN (?` + strings.Repeat(", ?", k-1) + `)`
		args := make([]any, k)
		for i := range args {
			args[i] = i
		}
		if err := s.Write(ctx, func(tx sqldb.SQLQueryer) error {
			for range 2 {
				if _, err := tx.ExecContext(ctx, q, args...); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	got := stmtCountsOf(s).minus(before)
	if got.prepared != lengths || got.misses != 2*lengths {
		t.Errorf("%d texts run twice each: %+v, want %d prepared", lengths, got, lengths)
	}
	if n := s.stmts.cache.Len(); n != stmtCacheSize {
		t.Errorf("%d statements kept, want the bound, %d", n, stmtCacheSize)
	}
	if want := stmtCountsOf(s).prepared - stmtCacheSize; stmtCountsOf(s).evictions != want {
		t.Errorf("%d evictions, want %d (prepared beyond the bound)", stmtCountsOf(s).evictions, want)
	}
	if s.stmts.seen.Len() > stmtCacheSize {
		t.Errorf("%d texts counted, more than the bound", s.stmts.seen.Len())
	}
}

// TestSettleRunsPreparedStatements: once the writer has seen a claim's and
// a settle's statements, the next claims and settles parse no SQL.
func TestSettleRunsPreparedStatements(t *testing.T) {
	app := tenant()
	app.Webhooks = []FixtureWebhook{{URL: "http://127.0.0.1:1/hook", Secret: "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}
	s := openSQLite(t, app)
	ctx := context.Background()
	a, err := s.AppByKey(ctx, app.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	req := domain.ImportRequest{AppID: a.ID, ScenarioID: "sc"}
	for i, p := range phones(6, 0) {
		fields, _ := json.Marshal(map[string]string{"ho_ten": fmt.Sprint("C", i)})
		req.Contacts = append(req.Contacts, domain.NewContact{Position: i, ID: domain.NewV7(), Fields: fields, Phone: p})
	}
	if _, err := s.Import(ctx, req, time.Now()); err != nil {
		t.Fatal(err)
	}
	due, err := s.DueContacts(ctx, a.ID, "sc", time.Now().Add(time.Minute), 10)
	if err != nil || len(due) != 6 {
		t.Fatalf("%d due, %v", len(due), err)
	}
	// Two rounds of three: a claim and a settle of each, the first round
	// seeing the statements, the second running them prepared.
	for round := range 2 {
		before := stmtCountsOf(s)
		var claims []domain.CallClaim
		for _, c := range due[3*round : 3*round+3] {
			claims = append(claims, domain.CallClaim{CallID: domain.NewV7(), AppID: a.ID, ScenarioID: "sc", Contact: c,
				Hotline: "02873000001", Start: time.Now()})
		}
		taken, err := s.ClaimCalls(ctx, claims, time.Now)
		if err != nil || len(taken) != 3 {
			t.Fatalf("round %d: %d claims taken, %v", round, len(taken), err)
		}
		for _, c := range taken {
			now := time.Now()
			res := domain.DialResult{Outcome: domain.OutcomeAnswered, Cause: domain.OutcomeCause[domain.OutcomeAnswered],
				AnsweredAt: &now, EndedAt: now, Talk: 30 * time.Second}
			if err := s.EndCall(ctx, domain.CallEnd{CallID: c.CallID, AppID: a.ID, Result: res, Now: now, FirstTry: now}); err != nil {
				t.Fatal(err)
			}
		}
		got := stmtCountsOf(s).minus(before)
		if round == 1 && (got.misses != 0 || got.hits == 0) {
			t.Errorf("claims and settles of statements seen before: %+v, want no miss", got)
		}
	}
	if n := countSQLite(t, s, `SELECT count(*) FROM webhook_messages`); n != 12 {
		t.Errorf("%d webhook messages queued, want 12 (two events for each of 6 calls)", n)
	}
}

// TestRowsPerStatement: multi-row statements carry a power of two of rows,
// the largest that fits, so their texts are few.
func TestRowsPerStatement(t *testing.T) {
	for _, c := range []struct{ n, max, want int }{
		{1, 128, 1}, {2, 128, 2}, {3, 128, 2}, {127, 128, 64}, {128, 128, 128}, {200, 128, 128}, {37, 64, 32},
	} {
		if got := rowsPerStatement(c.n, c.max); got != c.want {
			t.Errorf("rowsPerStatement(%d, %d) = %d, want %d", c.n, c.max, got, c.want)
		}
	}
	// A batch of every size up to 300 takes at most log2 statements a
	// kind, and every row.
	texts := map[int]bool{}
	for total := 1; total <= 300; total++ {
		done := 0
		for rest := total; rest > 0; {
			n := rowsPerStatement(rest, maxAttemptsPerStatement)
			texts[n] = true
			done += n
			rest -= n
		}
		if done != total {
			t.Fatalf("%d rows split into %d", total, done)
		}
	}
	if len(texts) != 8 {
		t.Errorf("%d statement sizes, want 8 (1 to 128)", len(texts))
	}
}
