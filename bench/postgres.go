package main

// The postgres phase: dialbox on PostgreSQL (docs/postgres.md), in four
// parts, each on a fresh database of the server of pgserver.go:
//   - the limit: raw pgx inserts of contact rows into dialbox's PostgreSQL
//     schema (its tables, indexes and triggers), 100 and 1000 rows per
//     commit, and COPY, with synchronous_commit on;
//   - operation A on one node (1 and 100 contacts per request);
//   - one node against three on one database: operations B and A, the
//     harness's load generator spreading requests over the nodes in turn;
//   - the engine dialling one shared queue with the simulator, on one node
//     and on three, without trunk limits and then on one trunk whose
//     max_channels and max_cps are the limit (the simulator holds
//     sip.trunks as the SIP dialer does): calls settled per second, claims
//     taken and refused, and checks from the database that no contact was
//     dialled twice and the trunk never held more than its channels.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// pgTrunk is the trunk the engine's runs call through: its max_channels
// and max_cps; zero, none (the calls' trunk is "", unlimited).
type pgTrunk struct{ Channels, CPS int }

// pgCallsTrunk is the trunk of the runs with trunk limits: fewer channels
// and calls per second than the nodes reach without it (the scenario's 200
// calls up, about 1,000 started in a second), so the trunk is the limit
// the claims hold.
var pgCallsTrunk = pgTrunk{Channels: 8, CPS: 500}

// pgCallsResult is one run of the engine on a shared queue.
type pgCallsResult struct {
	Nodes    int
	Trunk    pgTrunk
	Imported int64   // contacts acknowledged by operation A
	Settled  int64   // contacts whose call ended
	Rate     float64 // calls settled per second, first to last
	Cores    float64 // dialbox and PostgreSQL CPU over the run, in cores
	Calls    int64   // call records
	Dialled  int64   // distinct contacts among them
	NotOnce  int64   // contacts not ended after exactly one attempt
	PerNode  []int64 // contacts per claiming node, most first
	Taken    int64   // claims the nodes' schedulers asked for and got
	Refused  int64   // claims the database refused (another node's, or a limit across nodes)
	MostUp   int64   // most calls up at once on the run's trunk, from the call records
	MostCPS  int64   // most calls started on it in any one second, from the call records
}

// postgresPhase runs the phase; a failure is reported, not fatal: the
// other phases' figures stand.
func (h *Harness) postgresPhase(fixtures string) {
	err := h.postgres(fixtures)
	h.server, h.also, h.db = 0, nil, 0
	if err != nil {
		// One line for the report: pgx's errors span several.
		h.pgSkip = strings.ReplaceAll(strings.Join(strings.Fields(err.Error()), " "), "|", "/")
		logf("postgres: %v", err)
	}
}

func (h *Harness) postgres(fixtures string) error {
	var err error
	if h.o.postgres != "" {
		h.pg, err = usePgServer(h.o.postgres)
	} else {
		logf("postgres: starting a throwaway cluster")
		h.pg, err = startPgCluster()
	}
	if err != nil {
		return fmt.Errorf("no PostgreSQL: %w (-postgres URL names a server of your own)", err)
	}
	logf("postgres: %s; %s", h.pg.Version, h.pg.Settings)
	h.db = h.pg.pid
	if err := h.pgLimits(fixtures); err != nil {
		return err
	}
	if err := h.pgOperationA(fixtures); err != nil {
		return err
	}
	if err := h.pgNodes(fixtures); err != nil {
		return err
	}
	for _, trunk := range []pgTrunk{{}, pgCallsTrunk} {
		for _, nodes := range []int{1, 3} {
			if err := h.pgCallsRun(nodes, trunk); err != nil {
				return err
			}
		}
	}
	return nil
}

// pgGroups are the process groups of the nodes besides h.server, whose
// CPU a step counts (with PostgreSQL's, h.db).
func pgGroups(nodes ...*Dialbox) []int {
	var out []int
	for _, d := range nodes {
		out = append(out, d.Cmd.Process.Pid)
	}
	return out
}

// pgLimits measures raw inserts and COPY into an empty dialbox database.
func (h *Harness) pgLimits(fixtures string) error {
	logf("postgres: raw inserts and COPY into dialbox's schema")
	url, err := h.pg.newDatabase("raw")
	if err != nil {
		return err
	}
	d, err := StartDialbox(h.bin, "dialbox-pg-schema", h.scratch, url, fixtures, "", "")
	if err != nil {
		return fmt.Errorf("starting dialbox to make an empty database: %w", err)
	}
	d.Stop(15 * time.Second)
	appID, err := pgAppID(url)
	if err != nil {
		return err
	}
	same, err := opARows()
	if err != nil {
		return err
	}
	opA := func(i int64) rawRow { return same[i%int64(len(same))] }
	h.server, h.also = 0, nil
	for _, m := range []struct {
		key, label string
		batch      int
		copy       bool
	}{
		{"pg:raw100", "raw PostgreSQL inserts of op A's rows, 100 rows/commit (best of 2)", 100, false},
		{"pg:raw1000", "raw PostgreSQL inserts of op A's rows, 1000 rows/commit (best of 2)", 1000, false},
		{"pg:copy1000", "PostgreSQL COPY of op A's rows, 1000 rows/commit (best of 2)", 1000, true},
	} {
		// The best of two, as SQLite's: a moment of load from elsewhere
		// must not lower the limit dialbox is compared with.
		conn, err := rawPgConn(url)
		if err != nil {
			return err
		}
		var best *Point
		for try := 0; try < 2; try++ {
			p := h.measure(m.key, m.label, 1, func() (Result, error) {
				r, err := rawPgInserts(conn, appID, benchScenarioID, m.batch, m.copy, h.o.dur, h.o.maxReqs*100, opA)
				return Result{Conc: 1, Elapsed: r.Elapsed, Units: r.Rows}, err
			})
			if best == nil || p.Skipped != "" || p.Units > best.Units {
				best = p
			}
			if p.Skipped != "" {
				break
			}
		}
		conn.Close(context.Background())
		h.add(best)
	}
	return nil
}

// pgOperationA measures operation A on one node.
func (h *Harness) pgOperationA(fixtures string) error {
	logf("postgres: operation A on one node")
	url, err := h.pg.newDatabase("single")
	if err != nil {
		return err
	}
	d, err := h.startDialbox("dialbox-pg", url, fixtures, "")
	if err != nil {
		return err
	}
	defer d.Stop(30 * time.Second)
	h.also = nil
	for _, n := range []int{1, 100} {
		t := Target{Addr: d.Addr, Reqs: d.opA(n), Check: h.countAcked(checkImport)}
		for _, c := range h.pgConcs() {
			h.step(fmt.Sprintf("pg:A%d@%d", n, c), fmt.Sprintf("op A on PostgreSQL, %s/request @%d", contactsWord(n), c), t, c, nil)
		}
	}
	h.notePeak(d, "operation A on PostgreSQL")
	if err := d.Stop(30 * time.Second); err != nil {
		h.pgNotes = append(h.pgNotes, "dialbox did not stop cleanly after operation A on PostgreSQL: "+err.Error())
	}
	return h.pgDurability(url, "operation A on one node", ackedCounter.Load())
}

// pgConcs are the client counts operation A runs at on PostgreSQL: those
// of the run above one (a single client measures latency, which the main
// phase has).
func (h *Harness) pgConcs() []int {
	var out []int
	for _, c := range h.o.concs {
		if c > 1 {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return h.o.concs
	}
	return out
}

// pgDurability checks that every contact acknowledged is stored.
func (h *Harness) pgDurability(url, what string, acked int64) error {
	stored, err := pgCount(url, `SELECT count(*) FROM contacts`)
	if err != nil {
		return err
	}
	h.pgChecks = append(h.pgChecks, fmt.Sprintf("%s every contact acknowledged by %s is stored: %s acknowledged, %s stored after the nodes stopped",
		verdict(stored >= acked), what, num(float64(acked)), num(float64(stored))))
	return nil
}

// pgNodes measures operations B and A on one node, then on three nodes of
// one database, the same load spread over them in turn.
func (h *Harness) pgNodes(fixtures string) error {
	logf("postgres: one node against three")
	url, err := h.pg.newDatabase("nodes")
	if err != nil {
		return err
	}
	top := h.o.concs[len(h.o.concs)-1]
	n1, err := h.startDialbox("dialbox-pg-node1", url, fixtures, "")
	if err != nil {
		return err
	}
	defer n1.Stop(30 * time.Second)
	nodes := []*Dialbox{n1}
	steps := func(tag string) {
		var addrs []string
		for _, d := range nodes {
			addrs = append(addrs, d.Addr)
		}
		where := "1 node"
		if len(nodes) > 1 {
			where = strconv.Itoa(len(nodes)) + " nodes"
		}
		tB := Target{Addrs: addrs, Reqs: [][]byte{n1.opB()}, Check: checkOK}
		h.step(tag+":B@"+strconv.Itoa(top), fmt.Sprintf("op B on PostgreSQL, %s @%d", where, top), tB, top, nil)
		for _, n := range []int{1, 100} {
			t := Target{Addrs: addrs, Reqs: n1.opA(n), Check: h.countAcked(checkImport)}
			h.step(fmt.Sprintf("%s:A%d@%d", tag, n, top), fmt.Sprintf("op A on PostgreSQL, %s/request, %s @%d", contactsWord(n), where, top), t, top, nil)
		}
	}
	h.also = nil
	steps("pg1")
	for i := 2; i <= 3; i++ {
		d, err := StartDialbox(h.bin, fmt.Sprintf("dialbox-pg-node%d", i), h.scratch, url, fixtures, "", "")
		if err != nil {
			return err
		}
		defer d.Stop(30 * time.Second)
		nodes = append(nodes, d)
	}
	h.also = pgGroups(nodes[1:]...)
	steps("pg3")
	for _, d := range nodes {
		if err := d.Stop(30 * time.Second); err != nil {
			h.pgNotes = append(h.pgNotes, fmt.Sprintf("%s did not stop cleanly: %v", d.Name, err))
		}
	}
	return h.pgDurability(url, "operations A on one node and on three", ackedCounter.Load())
}

// pgCallsRun imports -pg-calls contacts, spread over the nodes, into a
// scenario every simulated call of which is answered and ends within
// milliseconds (time_scale 1000), through trunk (none: unlimited), and
// waits until every one is settled.
func (h *Harness) pgCallsRun(nodes int, trunk pgTrunk) error {
	tag, conf, name := "", webhookConfig(), ""
	if trunk.Channels > 0 {
		tag, name = "-trunk", "main"
		// Every node configures the same trunk (docs/postgres.md#claiming-calls);
		// the simulator holds it and never sends to its address.
		conf += fmt.Sprintf("[[sip.trunks]]\nname = %q\naddress = \"127.0.0.1:5060\"\nmax_channels = %d\nmax_cps = %d\n",
			name, trunk.Channels, trunk.CPS)
		logf("postgres: the engine on %d node(s) dialling one queue through a trunk of %d channels, %d calls/s", nodes, trunk.Channels, trunk.CPS)
	} else {
		logf("postgres: the engine on %d node(s) dialling one queue", nodes)
	}
	url, err := h.pg.newDatabase(fmt.Sprintf("calls%d%s", nodes, strings.TrimPrefix(tag, "-")))
	if err != nil {
		return err
	}
	fixtures := filepath.Join(h.scratch, "fixtures-pg-calls.toml")
	config := filepath.Join(h.scratch, "config-pg-calls"+tag+".toml")
	if err := os.WriteFile(fixtures, []byte(fixturesTOML("", 200, 200)), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(config, []byte(conf), 0o644); err != nil {
		return err
	}
	var ds []*Dialbox
	for i := 1; i <= nodes; i++ {
		d, err := StartDialbox(h.bin, fmt.Sprintf("dialbox-pg-calls%d%s-node%d", nodes, tag, i), h.scratch, url, fixtures, config, "")
		if err != nil {
			return err
		}
		defer d.Stop(30 * time.Second)
		ds = append(ds, d)
	}
	h.server, h.also = ds[0].Cmd.Process.Pid, pgGroups(ds[1:]...)
	var addrs []string
	for _, d := range ds {
		addrs = append(addrs, d.Addr)
	}
	appID, err := pgAppID(url)
	if err != nil {
		return err
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)

	per := min(1000, h.o.pgCalls)
	t := Target{Addrs: addrs, Reqs: ds[0].opA(per), Check: checkImport}
	type imported struct {
		r   Result
		err error
	}
	done := make(chan imported, 1)
	cpu0, start := h.serverCPU(), time.Now()
	go func() {
		r, err := Run(t, 4, 2*time.Minute, int64((h.o.pgCalls+per-1)/per))
		done <- imported{r, err}
	}()
	// Settled calls, polled from the database: the first and last change
	// bound the rate.
	var imp *imported
	var first, last int64
	var firstAt, lastAt time.Time
	deadline := start.Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case r := <-done:
			imp = &r
		default:
		}
		var n int64
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM contacts WHERE app_id = $1 AND state = 'done'`, appID).Scan(&n); err != nil {
			return err
		}
		now := time.Now()
		if n > 0 && firstAt.IsZero() {
			first, firstAt = n, now
		}
		if n != last {
			last, lastAt = n, now
		}
		if imp != nil && (imp.err != nil || n >= imp.r.Units || !lastAt.IsZero() && now.Sub(lastAt) > 20*time.Second) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if imp == nil {
		return fmt.Errorf("calls on %d nodes: the import did not end", nodes)
	}
	if imp.err != nil {
		return imp.err
	}
	if imp.r.Units == 0 {
		return fmt.Errorf("calls on %d nodes: operation A stored nothing: %s", nodes, imp.r.ErrMsg)
	}
	res := &pgCallsResult{Nodes: nodes, Trunk: trunk, Imported: imp.r.Units, Settled: last}
	if lastAt.After(firstAt) {
		res.Rate = float64(last-first) / lastAt.Sub(firstAt).Seconds()
		res.Cores = (h.serverCPU() - cpu0).Seconds() / lastAt.Sub(start).Seconds()
	}
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT contact_seq) FROM calls WHERE app_id = $1`, appID).Scan(&res.Calls, &res.Dialled); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM contacts WHERE app_id = $1 AND (state <> 'done' OR attempts <> 1)`, appID).Scan(&res.NotOnce); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, `SELECT count(*) FROM contacts WHERE app_id = $1 AND lease_node IS NOT NULL GROUP BY lease_node`, appID)
	if err != nil {
		return err
	}
	if res.PerNode, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		return err
	}
	slices.SortFunc(res.PerNode, func(a, b int64) int { return int(b - a) })
	if res.MostUp, res.MostCPS, err = trunkPeaks(ctx, conn, appID, name); err != nil {
		return err
	}
	// Claims taken and refused, every node's, from its /metrics: a refused
	// claim is a round trip and a lock held for nothing.
	for _, d := range ds {
		taken, refused, err := claimCounts(d.Addr)
		if err != nil {
			return err
		}
		res.Taken += taken
		res.Refused += refused
	}
	logf("  %d node(s): %s of %s contacts settled, %s calls/s; %s calls for %s contacts; per node %v; claims taken %s, refused %s; at most %d up, %d started in a second",
		nodes, num(float64(res.Settled)), num(float64(res.Imported)), num(res.Rate), num(float64(res.Calls)), num(float64(res.Dialled)), res.PerNode,
		num(float64(res.Taken)), num(float64(res.Refused)), res.MostUp, res.MostCPS)
	h.pgCalls = append(h.pgCalls, res)
	return nil
}

// trunkPeaks reads from the call records the most calls up at once on a
// trunk, across every node, and the most started in any one second (the
// window the claim counts: a start and the 999 ms after it). Every call
// has ended by now; its ended_at is no later than its node settled it,
// which came before any claim that took its channel, so at one
// millisecond ends are counted before starts.
func trunkPeaks(ctx context.Context, conn *pgx.Conn, appID int64, trunk string) (up, perSecond int64, err error) {
	err = conn.QueryRow(ctx, `SELECT coalesce(max(up), 0) FROM (
			SELECT sum(d) OVER (ORDER BY t, d) AS up FROM (
				SELECT started_at AS t, 1 AS d FROM calls WHERE app_id = $1 AND trunk = $2
				UNION ALL SELECT ended_at, -1 FROM calls WHERE app_id = $1 AND trunk = $2 AND ended_at IS NOT NULL) e) s`,
		appID, trunk).Scan(&up)
	if err != nil {
		return 0, 0, err
	}
	err = conn.QueryRow(ctx, `SELECT coalesce(max(n), 0) FROM (
			SELECT count(*) OVER (ORDER BY started_at RANGE BETWEEN CURRENT ROW AND 999 FOLLOWING) AS n
			FROM calls WHERE app_id = $1 AND trunk = $2) s`, appID, trunk).Scan(&perSecond)
	return up, perSecond, err
}

func pgAppID(url string) (int64, error) {
	return pgCount(url, `SELECT id FROM applications WHERE api_key = '`+benchAPIKey+`'`)
}

// pgCount runs a query of one number on a fresh connection.
func pgCount(url, query string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, query).Scan(&n)
	return n, err
}

// rawPgConn is the raw inserts' connection, synchronous commit on. It is
// opened before a step and closed after it: PostgreSQL's backend for it is
// a process whose CPU counts only while it runs.
func rawPgConn(url string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["synchronous_commit"] = "on"
	return pgx.ConnectConfig(context.Background(), cfg)
}

// rawPgInserts is rawInserts on PostgreSQL: one connection, batch rows per
// commit, sent as one pipelined batch of a prepared INSERT (one round trip
// per commit) or, with copyRows, as COPY; row(i) is the i-th row's phone
// and fields, as for rawInserts.
func rawPgInserts(conn *pgx.Conn, appID int64, scenarioID string, batch int, copyRows bool, dur time.Duration, maxRows int64, row func(int64) rawRow) (RawInsertResult, error) {
	ctx := context.Background()
	cols := []string{"id", "app_id", "scenario_id", "campaign_id", "import_id", "phone", "fields", "unique_phone", "next_attempt_at", "created_at", "updated_at"}
	insert := `INSERT INTO contacts (` + strings.Join(cols, ", ") + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`
	values := make([][]any, batch)
	var rows int64
	start := time.Now()
	deadline := start.Add(dur)
	for rows < maxRows && time.Now().Before(deadline) {
		importID := uuid.NewString()
		at := time.Now().UnixMilli()
		for i := range values {
			id, _ := uuid.NewV7()
			r := row(rows + int64(i))
			values[i] = []any{id.String(), appID, scenarioID, nil, importID, r.phone, r.fields, int32(0), at, at, at}
		}
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if copyRows {
				_, err := tx.CopyFrom(ctx, pgx.Identifier{"contacts"}, cols, pgx.CopyFromRows(values))
				return err
			}
			b := &pgx.Batch{}
			for _, v := range values {
				b.Queue(insert, v...)
			}
			return tx.SendBatch(ctx, b).Close()
		})
		if err != nil {
			return RawInsertResult{}, fmt.Errorf("raw insert: %w", err)
		}
		rows += int64(batch)
	}
	return RawInsertResult{Batch: batch, Rows: rows, Elapsed: time.Since(start)}, nil
}

// claimCounts reads dialbox_call_claims_total, taken and refused, from a
// node's /metrics.
func claimCounts(addr string) (taken, refused int64, err error) {
	status, body, err := fetch(addr, buildRequest("GET", addr, "/metrics", "", nil))
	if err != nil || status != 200 {
		return 0, 0, fmt.Errorf("GET /metrics: HTTP %d %v", status, err)
	}
	for _, l := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(l, `dialbox_call_claims_total{result="`)
		if !ok {
			continue
		}
		result, value, ok := strings.Cut(rest, `"} `)
		n, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if !ok || err != nil {
			return 0, 0, fmt.Errorf("GET /metrics: %q", l)
		}
		switch result {
		case "taken":
			taken += int64(n)
		case "refused":
			refused += int64(n)
		}
	}
	return taken, refused, nil
}
