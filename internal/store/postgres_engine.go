package store

import (
	"context"
	"errors"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sqldb"

	"github.com/jackc/pgx/v5"
)

// The engine on PostgreSQL, where several nodes dial one queue: a claim is
// the authority on what may be dialled (trunk channels and calls per
// second under a lock per trunk; max_concurrent, busy hotlines, the wallet
// and the call window under a lock per tenant; all counted across every
// node), each call is leased to its node, the node renews its leases,
// and a call whose lease ran out is settled by whichever node sees it
// first (docs/postgres.md#claiming-calls).

// ClaimCalls claims in one transaction: first the locks of the claims'
// trunks, in the order of their keys, then tenant by tenant in the order of
// their ids, so every claim takes its locks in one global order and two
// nodes claiming on the same trunks for the same tenants never deadlock.
// The locks and every count the limits need are one round trip
// (claimReads): other nodes wait for these locks, which are held for
// that, the contacts' claims and the commit.
func (s *Postgres) ClaimCalls(ctx context.Context, claims []domain.CallClaim, now func() time.Time) ([]domain.CallClaim, error) {
	byApp := map[int64][]domain.CallClaim{}
	var apps []int64
	for _, c := range claims {
		if _, ok := byApp[c.AppID]; !ok {
			apps = append(apps, c.AppID)
		}
		byApp[c.AppID] = append(byApp[c.AppID], c)
	}
	slices.Sort(apps)
	var out []domain.CallClaim
	leaseUntil := Millis(time.Now().Add(s.lease))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		out = out[:0]
		read, err := claimReads(ctx, tx, claims, apps, byApp, Millis(now())-1000)
		if err != nil {
			return err
		}
		for _, app := range apps {
			taken, err := s.claimForApp(ctx, tx, read.tenants[app], byApp[app], read.trunkRoom, leaseUntil, now)
			if err != nil {
				return err
			}
			out = append(out, taken...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.Metrics.Cluster.observeClaims(len(claims), len(out))
	return out, nil
}

// trunkLockClass is the first key of every trunk's advisory lock (the
// two-key space, apart from the one-key locks of migrations and folds).
const trunkLockClass = 7412002

// trunkLockKey is a trunk's second key: its name hashed. Two names on one
// key share a lock, which costs nothing but waiting.
func trunkLockKey(name string) int32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int32(h.Sum32())
}

// claimRead is what a claim reads under its locks: how many more calls
// each trunk with a capacity may start (a trunk without one, the
// simulator's, is not in the map), and each tenant's counts.
type claimRead struct {
	trunkRoom map[string]int
	tenants   map[int64]*tenantRead
}

// tenantRead is a tenant's counts, read under its lock.
type tenantRead struct {
	found     bool // false: deleted since the scheduler read it
	wallet    domain.Wallet
	calls     int             // its calls up on every node
	busy      map[string]bool // the claims' hotlines busy on any node
	scenarios map[string]*scenarioRead
}

// scenarioRead is a scenario of the claims as the claim reads it: its row
// (nil: deleted) and its calls up on every node.
type scenarioRead struct {
	sc *domain.Scenario
	up int
}

// claimReads takes every lock of a claim and reads every count its limits
// need in one round trip: a pipeline, whose statements run one after the
// other, each with a snapshot of its own (READ COMMITTED), so each count
// is read once the locks queued before it are held. First the lock of
// every trunk with a capacity, in the order of their keys, and the
// trunks' calls up and starts since since; then each tenant's lock, its
// wallet, its calls up and busy hotlines, and its claims' scenarios. Calls
// up and starts only grow through claims, which hold these locks, so the
// counts stay true until the commit. since is the claim's time less a
// second, read before the locks are waited for: a window begun earlier
// counts more starts, never fewer, and the calls are stamped once the
// locks are held (docs/postgres.md#claiming-calls).
func claimReads(ctx context.Context, tx pgx.Tx, claims []domain.CallClaim, apps []int64, byApp map[int64][]domain.CallClaim, since int64) (*claimRead, error) {
	read := &claimRead{tenants: map[int64]*tenantRead{}}
	b := &pgx.Batch{}
	capacity := map[string]domain.TrunkCapacity{}
	for _, c := range claims {
		if c.Capacity.Limited() {
			capacity[c.Trunk] = c.Capacity
		}
	}
	if len(capacity) > 0 {
		var keys []int32
		for n := range capacity {
			keys = append(keys, trunkLockKey(n))
		}
		slices.Sort(keys)
		keys = slices.Compact(keys)
		// ORDER BY: a volatile function of the select list runs after the sort.
		b.Queue(`SELECT pg_advisory_xact_lock($1, k) FROM unnest($2::int[]) AS k ORDER BY k`, trunkLockClass, keys)
		b.Queue(trunkCounts, since, slices.Sorted(maps.Keys(capacity))).Query(func(rows pgx.Rows) (err error) {
			read.trunkRoom, err = collectTrunkRoom(capacity, rows)
			return err
		})
	}
	for _, app := range apps {
		t := &tenantRead{busy: map[string]bool{}, scenarios: map[string]*scenarioRead{}}
		read.tenants[app] = t
		b.Queue(`SELECT 1 FROM applications WHERE id = $1 FOR NO KEY UPDATE`, app).QueryRow(func(row pgx.Row) error {
			var one int
			err := row.Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			t.found = err == nil
			return err
		})
		var hotlines []string
		for _, c := range byApp[app] {
			hotlines = append(hotlines, c.Hotline)
		}
		b.Queue(`SELECT coalesce(w.prepaid, 0) <> 0, coalesce(w.balance, 0), w.expires_at,
				coalesce(w.price_per_call, 0), coalesce(w.price_per_minute, 0), c.up, c.busy
			FROM (SELECT count(*) AS up, coalesce(array_agg(hotline) FILTER (WHERE hotline = ANY($2)), '{}') AS busy
				FROM calls WHERE app_id = $1 AND state = 'dialing') c
			LEFT JOIN wallets w ON w.app_id = $1`, app, hotlines).QueryRow(func(row pgx.Row) error {
			w := &t.wallet
			var expires *int64
			var busy []string
			if err := row.Scan(&w.Prepaid, &w.Balance, &expires, &w.PricePerCall, &w.PricePerMinute, &t.calls, &busy); err != nil {
				return err
			}
			if expires != nil {
				at := FromMillis(*expires)
				w.ExpiresAt = &at
			}
			for _, h := range busy {
				t.busy[h] = true
			}
			return nil
		})
		for _, c := range byApp[app] {
			if _, ok := t.scenarios[c.ScenarioID]; ok {
				continue
			}
			sr := &scenarioRead{}
			t.scenarios[c.ScenarioID] = sr
			b.Queue(`SELECT `+scenarioColumns+` FROM scenarios WHERE app_id = $1 AND id = $2`, app, c.ScenarioID).QueryRow(func(row pgx.Row) error {
				sc, err := scanScenario(sqldb.PGXRow(row))
				if errors.Is(err, domain.ErrNotFound) {
					return nil
				}
				sr.sc = sc
				return err
			})
			b.Queue(`SELECT count(*) FROM calls WHERE app_id = $1 AND scenario_id = $2 AND state = 'dialing'`, app, c.ScenarioID).
				QueryRow(func(row pgx.Row) error { return row.Scan(&sr.up) })
		}
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	return read, nil
}

// trunkCounts is each trunk's calls up on every node and its calls started
// after $1 (a node whose clock runs ahead stamps its starts ahead), for
// the names $2.
const trunkCounts = `SELECT t.name,
		(SELECT count(*) FROM calls c WHERE c.trunk = t.name AND c.trunk <> '' AND c.state = 'dialing'),
		(SELECT count(*) FROM calls c WHERE c.trunk = t.name AND c.trunk <> '' AND c.started_at > $1)
	FROM unnest($2::text[]) AS t(name)`

// collectTrunkRoom is how many more calls each trunk of capacity may
// start, from trunkCounts' rows: its max_channels less its calls up, and
// its max_cps less its starts.
func collectTrunkRoom(capacity map[string]domain.TrunkCapacity, rows pgx.Rows) (map[string]int, error) {
	room := map[string]int{}
	var name string
	var up, started int
	_, err := pgx.ForEachRow(rows, []any{&name, &up, &started}, func() error {
		c, left := capacity[name], math.MaxInt
		if c.Channels > 0 {
			left = min(left, c.Channels-up)
		}
		if c.CPS > 0 {
			left = min(left, c.CPS-started)
		}
		room[name] = max(left, 0)
		return nil
	})
	return room, err
}

// TrunkRoom reads, without a lock, what lockTrunks reads under its lock:
// how many more calls the trunk may start at now on every node, so the
// scheduler offers only the claims it leaves room for, as CallsUp does for
// the tenant. Another node may claim between this read and the claim,
// which stays exact (docs/postgres.md#claiming-calls).
func (s *Postgres) TrunkRoom(ctx context.Context, trunk string, capacity domain.TrunkCapacity, now time.Time) (int, bool, error) {
	rows, err := s.pool.Query(ctx, trunkCounts, Millis(now)-1000, []string{trunk})
	if err != nil {
		return 0, true, err
	}
	room, err := collectTrunkRoom(map[string]domain.TrunkCapacity{trunk: capacity}, rows)
	return room[trunk], true, err
}

// claimForApp takes what the tenant's limits allow of its claims, from
// t, its counts read under its lock (claimReads). The lock on the
// tenant's row serializes its claims across nodes; calls up only ever
// grow through such claims, so the counts stay true until the commit.
// (NO KEY: imports, which reference the row, go on.) trunkRoom is what
// the claims' trunks still allow, less what this transaction took already.
func (s *Postgres) claimForApp(ctx context.Context, tx pgx.Tx, t *tenantRead, claims []domain.CallClaim, trunkRoom map[string]int,
	leaseUntil int64, now func() time.Time) ([]domain.CallClaim, error) {
	if !t.found {
		return nil, nil // deleted since the scheduler read it
	}
	appID, w, appCalls := claims[0].AppID, t.wallet, t.calls
	// The wallet, as Engine.budget reads it (no wallet: postpaid): a
	// prepaid one must hold the least an answered call costs for each call
	// up and each new one.
	least := max(w.PricePerCall, w.PricePerMinute)
	walletLeft, unlimited := 0, !w.Prepaid
	start := claims[0].Start
	switch {
	case unlimited:
	case w.Expired(start) || w.Balance < least:
		return nil, nil
	case least == 0:
		unlimited = true
	default:
		walletLeft = int(w.Balance/least) - appCalls
	}
	// The claims on free hotlines, by scenario in the order they came.
	var scenarios []string
	byScenario := map[string][]domain.CallClaim{}
	for _, c := range claims {
		if t.busy[c.Hotline] {
			continue
		}
		if _, ok := byScenario[c.ScenarioID]; !ok {
			scenarios = append(scenarios, c.ScenarioID)
		}
		byScenario[c.ScenarioID] = append(byScenario[c.ScenarioID], c)
	}
	var out []domain.CallClaim
	for _, id := range scenarios {
		group := byScenario[id]
		n := min(len(group), t.scenarios[id].room(group[0].Start))
		if !unlimited {
			n = min(n, walletLeft)
		}
		// A scenario's claims share its pool's trunk.
		trunk := group[0].Trunk
		left, limited := trunkRoom[trunk]
		if limited {
			n = min(n, left)
		}
		if n <= 0 {
			continue
		}
		var taken []domain.CallClaim
		var err error
		if group[0].AdPhone != "" {
			taken, err = s.takeAdvertising(ctx, tx, appID, group, n, leaseUntil, now())
		} else {
			taken, err = s.takeDue(ctx, tx, appID, id, group[:n], leaseUntil, now())
		}
		if err != nil {
			return nil, err
		}
		walletLeft -= len(taken)
		if limited {
			trunkRoom[trunk] -= len(taken)
		}
		out = append(out, taken...)
	}
	return out, nil
}

// adCallsOf counts, for the numbers of the advertising claims, the
// tenant's advertising calls that hold the per-number daily limit: those
// up on any node and those answered in the last adDay, as dialRules.wait
// counts them; with the limit read in the claim's transaction. Calls up
// only grow through claims, which hold the tenant's lock, and an answer
// is committed before its call stops being up, so the count stays true
// until the commit (docs/postgres.md#claiming-calls).
func adCallsOf(ctx context.Context, tx pgx.Tx, appID int64, claims []domain.CallClaim, start time.Time) (map[string]int, int, error) {
	var phones []string
	for _, c := range claims {
		if c.AdPhone != "" {
			phones = append(phones, c.AdPhone)
		}
	}
	if len(phones) == 0 {
		return nil, 0, nil
	}
	ads, err := adSettingsOf(ctx, sqldb.PGX(tx), appID)
	if err != nil {
		return nil, 0, err
	}
	out, err := sqldb.CollectMap(ctx, sqldb.PGX(tx), sqldb.KeyValue[string, int], `SELECT ad_phone, count(*) FROM calls
		WHERE app_id = ? AND ad_phone = ANY(?) AND ad_phone IS NOT NULL
			AND (state = 'dialing' OR (answered_at IS NOT NULL AND answered_at > ?))
		GROUP BY ad_phone`, appID, phones, Millis(start.Add(-domain.AdDay)))
	if err != nil {
		return nil, 0, err
	}
	return out, ads.MaxCallsPerNumberPerDay, nil
}

// takeAdvertising claims up to n of an advertising scenario's claims for
// exactly the contacts they name: those the engine screened against the
// national register and whose numbers it found under the daily limit
// (docs/compliance.md#how-dialbox-enforces-it). The limit is checked
// again here against every node's calls. SKIP LOCKED: a contact another
// node is claiming is left to it; one it claimed already is no longer
// queued.
func (s *Postgres) takeAdvertising(ctx context.Context, tx pgx.Tx, appID int64, group []domain.CallClaim, n int,
	leaseUntil int64, start time.Time) ([]domain.CallClaim, error) {
	adCalls, adLimit, err := adCallsOf(ctx, tx, appID, group, start)
	if err != nil {
		return nil, err
	}
	var taken []domain.CallClaim
	for _, c := range group {
		if len(taken) == n {
			break
		}
		if adCalls[c.AdPhone] >= adLimit {
			continue
		}
		err := tx.QueryRow(ctx, `UPDATE contacts SET state = 'dialing', attempts = attempts + 1, updated_at = $2,
			lease_node = $3, lease_until = $4
			WHERE seq = (SELECT seq FROM contacts WHERE seq = $1 AND state = 'queued' FOR UPDATE SKIP LOCKED)
			RETURNING attempts`, c.Contact.Seq, Millis(start), s.node, leaseUntil).Scan(&c.Attempt)
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return nil, err
		}
		c.Start = start
		if _, err := tx.Exec(ctx, `INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, started_at, scenario_id, trunk, ad_phone)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, c.CallID, c.Contact.Seq, c.AppID, c.Attempt, c.Hotline, Millis(start),
			c.ScenarioID, c.Trunk, c.AdPhone); err != nil {
			return nil, err
		}
		adCalls[c.AdPhone]++
		taken = append(taken, c)
	}
	return taken, nil
}

// takeDue gives each claim of the group one of the scenario's contacts due
// at start, the longest waiting first, and records its call, all started
// at start. The claims name the contacts their node read as due, but
// another node may have taken those meanwhile: every node reads the same
// head of the queue, so a claim of exactly those would mostly come back
// empty. SKIP LOCKED: a contact another node is claiming is left to it,
// not waited for. A number on the tenant's do-not-call list is passed
// over: the engine screened the contacts it read, not those it is given
// (an advertising scenario's, which the national register screens too,
// are claimed as named: takeAdvertising). start is read once the tenant's counts hold: a call
// another node ended and settled to make room was read as ended, so it is
// recorded ending before this one starts (max_concurrent and the hotlines
// can be checked from the records).
func (s *Postgres) takeDue(ctx context.Context, tx pgx.Tx, appID int64, scenarioID string, group []domain.CallClaim, leaseUntil int64, start time.Time) ([]domain.CallClaim, error) {
	var ids, hotlines, trunks []string
	for _, c := range group {
		ids, hotlines, trunks = append(ids, c.CallID), append(hotlines, c.Hotline), append(trunks, c.Trunk)
	}
	// One statement, one round trip under the claim's locks: the contacts
	// taken are numbered, and the i-th gets the i-th claim's call.
	var taken []domain.CallClaim
	err := sqldb.PGX(tx).Query(ctx, `WITH taken AS (
			UPDATE contacts SET state = 'dialing', attempts = attempts + 1, updated_at = ?, lease_node = ?, lease_until = ?
			WHERE seq IN (SELECT c.seq FROM contacts c
				WHERE c.app_id = ? AND c.scenario_id = ? AND c.state = 'queued' AND c.next_attempt_at <= ?
					AND (c.campaign_id IS NULL OR NOT EXISTS (SELECT 1 FROM campaigns k
						WHERE k.app_id = c.app_id AND k.id = c.campaign_id AND k.paused = 1))
					AND NOT EXISTS (SELECT 1 FROM dnc_lists l JOIN dnc_numbers d ON d.list_id = l.id
						WHERE l.state = 'current' AND l.app_id = ?
							AND d.number = CASE WHEN c.phone ~ '^\+[0-9]{1,15}$' THEN substr(c.phone, 2)::bigint END)
				ORDER BY c.next_attempt_at, c.seq LIMIT ? FOR UPDATE OF c SKIP LOCKED)
			RETURNING seq, phone, fields, attempts),
		numbered AS (SELECT seq, phone, fields, attempts, row_number() OVER (ORDER BY seq) AS i FROM taken),
		recorded AS (INSERT INTO calls (id, contact_seq, app_id, attempt, hotline, started_at, scenario_id, trunk)
			SELECT u.id, n.seq, ?, n.attempts, u.hotline, ?, ?, u.trunk
			FROM numbered n JOIN unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS u(id, hotline, trunk, i) ON u.i = n.i)
		SELECT seq, phone, fields, attempts FROM numbered ORDER BY i`,
		[]any{Millis(start), s.node, leaseUntil, appID, scenarioID, Millis(start), appID, len(group),
			appID, Millis(start), scenarioID, ids, hotlines, trunks},
		func(scan func(...any) error) error {
			c := group[len(taken)]
			if err := scan(&c.Contact.Seq, &c.Contact.Phone, &c.Contact.Fields, &c.Attempt); err != nil {
				return err
			}
			c.Start = start
			taken = append(taken, c)
			return nil
		})
	if err != nil {
		return nil, err
	}
	return taken, nil
}

// room is how many more calls the scenario may start at now: its
// max_concurrent less its calls up on every node, or 0 when it is no
// longer ACTIVE or now is outside its call window (another node changed
// it since this one's cache was read).
func (r *scenarioRead) room(now time.Time) int {
	if r.sc == nil || r.sc.Status != domain.StatusActive {
		return 0
	}
	if w, err := domain.ParseCallWindow(r.sc.CallConfig.CallWindow); err != nil || !w.Contains(now) {
		return 0
	}
	return r.sc.CallConfig.MaxConcurrent - r.up
}

// EndCall settles one call as SQLite does (endCallTx), in its own
// transaction.
func (s *Postgres) EndCall(ctx context.Context, e domain.CallEnd) error {
	_, err := s.settle(ctx, e)
	return err
}

// settle is EndCall, saying whether it settled the call (false: it was
// settled already). It runs in a settler's group commit (settleJob):
// every call's end writes its tenant's hot rows (the count of unfinished
// contacts, the wallet), which a transaction holds until its commit, so
// those writes are left to the end of the batch (execLast), in the order
// an import takes them (the count before the contact). The call's row is
// locked first, so of two nodes settling one call (its own and one taking
// over a lease that ran out) the second finds it ended and does nothing.
func (s *Postgres) settle(ctx context.Context, e domain.CallEnd) (bool, error) {
	settled := false
	var last []pgStmt
	err := s.settleJob(ctx, func(tx pgx.Tx) error {
		var appID int64
		err := tx.QueryRow(ctx, `SELECT app_id FROM calls WHERE id = $1 AND state = 'dialing' FOR UPDATE`, e.CallID).Scan(&appID)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := endCallTx(pgTx(ctx, tx, &last), e); err != nil {
			return err
		}
		settled = true
		return nil
	}, &last)
	return settled && err == nil, err
}

// SettleInterrupted settles the calls whose lease ran out: their node
// died, or stopped without settling them. On PostgreSQL it is what a start
// does and what every node does every takeoverEvery (TakeOverCalls); a
// restarted node's calls of its last run wait out their lease like any
// other's, as its new run is a new node. Each call is settled in its own
// transaction, as EndCall settles it.
func (s *Postgres) SettleInterrupted(ctx context.Context, now, firstTry time.Time) (int, error) {
	ids, err := sqldb.Collect(ctx, s.db, scanCallID, `SELECT c.id FROM calls c JOIN contacts k ON k.seq = c.contact_seq
		WHERE c.state = 'dialing' AND k.state = 'dialing' AND k.lease_until < ? ORDER BY c.id`, Millis(time.Now()))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		res := domain.DialResult{Outcome: domain.OutcomeCanceled, Cause: domain.OutcomeCause[domain.OutcomeCanceled], EndedAt: now}
		ok, err := s.settle(ctx, domain.CallEnd{CallID: id, Result: res, Interrupted: true, RetryAt: now, Now: now, FirstTry: firstTry})
		if err != nil {
			return n, err
		}
		if ok {
			n++
			s.Metrics.Cluster.observeTakeover(takeoverCall)
		}
	}
	return n, nil
}

// CallsUp reads the tenant's calls up on every node (calls_hotline_busy's
// rows), so a node's scheduler offers only the claims they leave room for.
func (s *Postgres) CallsUp(ctx context.Context, appID int64) (domain.CallsUp, bool, error) {
	up := domain.CallsUp{ByScenario: map[string]int{}, Hotlines: map[string]bool{}}
	err := sqldb.PGX(s.pool).Query(ctx, `SELECT scenario_id, hotline FROM calls WHERE app_id = ? AND state = 'dialing'`,
		[]any{appID}, func(scan func(...any) error) error {
			var scenario, hotline string
			if err := scan(&scenario, &hotline); err != nil {
				return err
			}
			up.Total++
			up.ByScenario[scenario]++
			up.Hotlines[hotline] = true
			return nil
		})
	return up, true, err
}

func (s *Postgres) TakeOverCalls(ctx context.Context, now, firstTry time.Time) (int, error) {
	return s.SettleInterrupted(ctx, now, firstTry)
}

// renewLeases pushes back the lease of every call this node has up and of
// every webhook message it holds (heldMessages): a message's attempt may
// outlast a lease (webhooks.timeout), and must not be sent by another node
// meanwhile. A row another transaction holds is skipped, not waited for:
// it is being settled or recorded (which ends its lease), and waiting
// would hold the rows renewed so far against that transaction, a deadlock
// when it settles several calls at once.
func (s *Postgres) renewLeases(ctx context.Context, now time.Time) error {
	until := Millis(now.Add(s.lease))
	if _, err := s.pool.Exec(ctx, `UPDATE contacts SET lease_until = $2 WHERE seq IN (
		SELECT seq FROM contacts WHERE lease_node = $1 AND state = 'dialing' FOR UPDATE SKIP LOCKED)`,
		s.node, until); err != nil {
		return err
	}
	held := s.heldMessageSeqs()
	if len(held) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `UPDATE webhook_messages SET lease_until = $2 WHERE seq IN (
		SELECT seq FROM webhook_messages WHERE seq = ANY($3) AND lease_node = $1 FOR UPDATE SKIP LOCKED)`,
		s.node, until, held)
	return err
}

// keepLeases renews this node's leases every third of the lease until the
// store closes.
func (s *Postgres) keepLeases(stop <-chan struct{}) {
	s.every(stop, s.lease/3, s.lease/3, func(ctx context.Context) {
		if err := s.renewLeases(ctx, time.Now()); err != nil {
			s.Metrics.Cluster.observeLeaseRenewalFailure()
		}
	})
}

// every runs job every period, each run given timeout, until stop is
// closed; the store's Close waits for it (done).
func (s *Postgres) every(stop <-chan struct{}, period, timeout time.Duration, job func(ctx context.Context)) {
	defer s.done.Done()
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			job(ctx)
			cancel()
		}
	}
}
