package main

// The report: one markdown table, every figure beside its ratio to the
// matching limit or peer, then the targets of issue 5 as PASS/MISS lines,
// written between the markers of docs/benchmarks.md (see writeBetween).

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func lat(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0f ms", float64(d)/1e6)
}

func pct(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*a/b)
}

func times(a, b float64) string {
	if b == 0 {
		return "-"
	}
	r := a / b
	if r >= 10 {
		return fmt.Sprintf("%.0fx", r)
	}
	return fmt.Sprintf("%.1fx", r)
}

// got returns a measured point, or nil when it was not measured.
func (h *Harness) got(key string) *Point {
	p := h.points[key]
	if p == nil || p.Skipped != "" || p.Req == 0 && p.Units == 0 {
		return nil
	}
	return p
}

// rawLimit is the raw insert rate operation A is compared with: the best
// of the batch sizes measured of raw inserts of operation A's own rows
// (docs/benchmarks.md#the-raw-insert-reference).
func (h *Harness) rawLimit() (*Point, string) {
	var best *Point
	for _, k := range []string{"raw100", "raw1000"} {
		if p := h.got(k); p != nil && (best == nil || p.Units > best.Units) {
			best = p
		}
	}
	if best == nil {
		return nil, ""
	}
	return best, fmt.Sprintf("raw inserts of the same rows (%d/commit)", map[string]int{"raw100": 100, "raw1000": 1000}[best.Key])
}

// peerRatios compares v with every measured peer's rate of the same step.
func (h *Harness) peerRatios(v float64, step string, conc int) string {
	var parts []string
	for _, p := range peers {
		if q := h.got(fmt.Sprintf("peer:%s:%s@%d", p.Name, step, conc)); q != nil {
			parts = append(parts, times(v, q.Req)+" "+p.Name)
		}
	}
	return strings.Join(parts, ", ")
}

// fastestPeer is the best peer rate of a step.
func (h *Harness) fastestPeer(step string, conc int) (float64, string) {
	best, name := 0.0, ""
	for _, p := range peers {
		if q := h.got(fmt.Sprintf("peer:%s:%s@%d", p.Name, step, conc)); q != nil && q.Req > best {
			best, name = q.Req, p.Name
		}
	}
	return best, name
}

// compare is the "compared with" cell of a point.
func (h *Harness) compare(p *Point) string {
	if p.Skipped != "" {
		return "skipped: " + p.Skipped
	}
	var parts []string
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	bare := h.got(fmt.Sprintf("bare@%d", p.Conc))
	raw, rawName := h.rawLimit()
	k := p.Key
	switch {
	case strings.HasPrefix(k, "bare@"):
		add("limit for op B (req/s)")
	case strings.HasPrefix(k, "decode@"):
		add("limit for op A bodies (contacts/s)")
		if bare != nil {
			add(pct(p.Req, bare.Req) + " of bare small JSON (req/s)")
		}
	case k == "rawbare1000":
		add("not the limit: the contacts table's columns with its primary key alone, no counts")
		if r, _ := h.rawLimit(); r != nil {
			add(times(p.Units, r.Units) + " the limit")
		}
	case k == "rawseq1000":
		add("not the limit: ascending phones grow the phone index only at its end")
		if r, _ := h.rawLimit(); r != nil {
			add(times(p.Units, r.Units) + " the limit")
		}
	case strings.HasPrefix(k, "raw"):
		if r, _ := h.rawLimit(); r == p {
			add("limit for op A (contacts/s)")
		} else if r != nil {
			add(pct(p.Units, r.Units) + " of the limit")
		}
	case strings.HasPrefix(k, "B@"):
		if bare != nil {
			add(pct(p.Req, bare.Req) + " of bare net/http")
		}
		add(h.peerRatios(p.Req, "B", p.Conc))
	case strings.HasPrefix(k, "A") && strings.Contains(k, "@"):
		n, _ := strconv.Atoi(strings.TrimPrefix(k[:strings.Index(k, "@")], "A"))
		if n == 1 {
			if bare != nil {
				add(pct(p.Req, bare.Req) + " of bare net/http (req/s)")
			}
			add(h.peerRatios(p.Req, "A1", p.Conc))
		} else if dec := h.got(fmt.Sprintf("decode@%d", p.Conc)); dec != nil {
			add(pct(p.Units, dec.Units) + " of bare decode")
		}
		if raw != nil {
			add(pct(p.Units, raw.Units) + " of " + rawName)
		}
		if seq := h.got("rawseq1000"); seq != nil {
			add(pct(p.Units, seq.Units) + " of raw inserts of ascending phones")
		}
		if bare := h.got("rawbare1000"); bare != nil {
			add(times(p.Units, bare.Units) + " raw inserts into a bare table")
		}
	case strings.HasPrefix(k, "g"):
		tag, step, _ := strings.Cut(k, ":")
		if base := h.got("g0:" + step); base != nil && tag != "g0" {
			add(pct(p.Units, base.Units) + " of the fresh database")
		}
		if raw != nil {
			add(pct(p.Units, raw.Units) + " of " + rawName)
		}
	case strings.HasPrefix(k, "dnc:with:"):
		if base := h.got("dnc:without:" + strings.TrimPrefix(k, "dnc:with:")); base != nil {
			add(pct(p.Units, base.Units) + " of the same step without the register")
		}
	case strings.HasPrefix(k, "peer:"):
		if bare != nil {
			add(pct(p.Req, bare.Req) + " of bare net/http")
		}
	}
	if p.Errors > 0 {
		add(fmt.Sprintf("**%d errors**: %.100s", p.Errors, strings.ReplaceAll(p.ErrMsg, "|", "/")))
	}
	return strings.Join(parts, "; ")
}

// The report is written into a page of the docs between marker comments,
// so the hand-written analysis around it stays. A plain run rewrites the
// figures; a -cpuprofile run (a profiling build, often of some phases only)
// rewrites the part that says where the time goes, and leaves the figures.
const (
	figuresBegin  = "<!-- bench:begin -->"
	figuresEnd    = "<!-- bench:end -->"
	profilesBegin = "<!-- bench:profiles:begin -->"
	profilesEnd   = "<!-- bench:profiles:end -->"
)

func (h *Harness) report() error {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	profiling := h.o.cpuprofile != ""
	h.runHeader(w)
	if !profiling {
		h.headline(w)
	}
	h.steps(w)
	h.crossCheckSection(w)
	if !profiling {
		h.pgSection(w)
		h.sipSection(w)
		h.dncSection(w)
		h.latencySection(w)
		w("\n### Targets (issue 5)\n\n")
		for _, t := range append(h.targets(), h.sipTargets()...) {
			w("- %s\n", t)
		}
	}
	if len(h.notes) > 0 || len(h.profiles) > 0 {
		w("\n### %s\n\n", h.section("Notes"))
		for _, n := range h.notes {
			w("- %s\n", n)
		}
		for _, f := range h.profiles {
			w("- CPU profile: `%s` (`go tool pprof -top %s`).\n", filepath.Base(f), filepath.Base(f))
		}
	}
	h.profileSection(w)
	out := b.String()
	fmt.Println(out)
	if h.o.out == "-" {
		return nil
	}
	path := h.o.out
	if !filepath.IsAbs(path) {
		path = filepath.Join(h.repo, path)
	}
	begin, end := figuresBegin, figuresEnd
	if profiling {
		begin, end = profilesBegin, profilesEnd
	}
	if err := writeBetween(path, begin, end, out); err != nil {
		return err
	}
	logf("wrote %s (between %s and %s)", path, begin, end)
	return nil
}

// section names a generated heading; a profiling run's headings say so, as
// they share the page with the figures of the full run.
func (h *Harness) section(name string) string {
	if h.o.cpuprofile != "" {
		return name + " (profiling run)"
	}
	return name
}

// runHeader says when, on what and how the figures were taken.
func (h *Harness) runHeader(w func(string, ...any)) {
	if h.o.quick {
		w("> **Quick run** (`-quick`): short steps and small sizes, a smoke test of the harness; not figures to compare.\n\n")
	}
	w("Written by `go run ./bench` (the harness in `bench/`) on %s, in %s.\n\n", h.started.Format("2006-01-02 15:04 MST"),
		time.Since(h.started).Round(time.Second))
	w("- Machine: %d cores (%s), %s; dialbox commit %s.\n", runtime.NumCPU(), cpuModel(), runtime.Version(), h.commit)
	w("- Each step: %s of load (twice that with 1000-contact requests) after %s of warm-up, a closed loop of N keep-alive connections from the harness's own Go load generator (raw HTTP/1.1, prebuilt requests), all on 127.0.0.1; p50/p99 are per-request latencies.\n",
		h.o.dur, h.o.warmup)
	w("- Server CPU: cores the server's processes used during the step (from /proc); the machine has %d, and the load generator and the other tenants of the machine use the rest. A server below its share is waiting, not computing.\n", runtime.NumCPU())
	w("- dialbox runs as its own process (`dialbox serve`, default config, WAL + synchronous=FULL), with a postpaid tenant, an ACTIVE scenario with `allow_duplicate_phone = true` and ten scenarios in all (operation B answers a page of ten). Operation A counts only contacts whose `contact_id` came back, i.e. durably committed.\n")
	w("- Growth sizes: %s and %s contacts stored (fill: %s). Each size is measured on a copy of the filled database, so the contacts the steps themselves add do not change the sizes; the fresh database is another file.\n", num(float64(h.o.fill1)), num(float64(h.o.fill2)), fillDescription(h.o.fillMode))
	if len(h.peerVer) > 0 {
		w("- Peers (npm): %s; configured with the same two operations, answering the bytes dialbox answered, each at its fastest documented settings: WireMock with `--no-request-journal --disable-request-logging`, Prism with `-v warn` (it still validates every request against the OpenAPI document), Mockoon with templating off. They store nothing.\n", strings.Join(h.peerVer, ", "))
	}
	if h.o.cpuprofile != "" {
		w("- dialbox was the profiling build (CPU profiles in %s); figures are a few percent lower than a plain build's.\n", h.o.cpuprofile)
	}
	w("- The machine is shared and noisy; compare the ratios within one run rather than absolute figures across runs.\n")
}

// steps is the table of every measured step.
func (h *Harness) steps(w func(string, ...any)) {
	w("\n### %s\n\n", h.section("All steps"))
	w("| Step | Clients | Requests/s | Contacts/s | p50 | p99 | Server CPU | Compared with |\n")
	w("|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, k := range h.order {
		p := h.points[k]
		if strings.HasPrefix(k, "wrk:") || isPgKey(k) {
			continue // in the cross-check and PostgreSQL sections
		}
		req, units := "-", "-"
		if p.Req > 0 {
			req = num(p.Req)
		}
		if p.Units > 0 {
			units = num(p.Units)
			if strings.HasPrefix(k, "raw") {
				units += " rows/s"
			}
		}
		cores := "-"
		if p.Cores > 0 {
			cores = fmt.Sprintf("%.2f", p.Cores)
		}
		w("| %s | %d | %s | %s | %s | %s | %s | %s |\n", p.Label, p.Conc, req, units, lat(p.P50), lat(p.P99), cores, h.compare(p))
	}
	for _, p := range peers {
		if why := h.peerSkip[p.Name]; why != "" {
			w("| %s | - | - | - | - | - | - | skipped: %s |\n", p.Name, strings.ReplaceAll(why, "|", "/"))
		}
	}
	if wh := h.webhook; wh != nil {
		w("| webhooks, latency at a steady %s deliveries/s | - | - | - | %s | %s | - | from a call's end (data.ended_at) to its arrival at the receiver |\n",
			num(wh.PacedRate), lat(wh.P50), lat(wh.P99))
		cores := "-"
		if wh.BurstWall > 0 {
			cores = fmt.Sprintf("%.2f", wh.BurstCPU.Seconds()/wh.BurstWall.Seconds())
		}
		w("| webhooks, burst: %s contacts called at once | - | %s deliveries/s | - | - | - | %s | engine and delivery together; %s of the 5,000/s target; the engine's calls made %s deliveries/s due; dialbox's CPU %s ms per 1,000 deliveries%s |\n",
			num(float64(wh.Contacts)), num(wh.LiveRate), cores, pct(wh.LiveRate, 5000), num(wh.EngineRate), num(wh.cpuPer1000()), dupNote(wh.LiveDups))
		w("| webhooks, drain of %s queued messages | - | %s deliveries/s | - | - | - | - | delivery alone; %s of the 5,000/s target%s |\n",
			num(float64(wh.Drained)), num(wh.DrainRate), pct(wh.DrainRate, 5000), dupNote(wh.DrainDups))
	} else {
		w("| webhook deliveries | - | - | - | - | - | - | %s |\n", h.webhookSkip)
	}
	w("| dialbox peak resident memory | - | - | - | - | - | - | %.1f MB (VmHWM), during %s; %s of the 150 MB target |\n", h.peakRSS, h.peakRSSWhere, pct(h.peakRSS, 150))
	perRow := func(s sizeRow) float64 { return float64(s.bytes) / float64(s.contacts) }
	if r := h.rawSize; r != nil {
		w("| database size, raw inserts (limit) | - | - | - | - | - | - | %s rows in %.1f MB: %.0f bytes per row, same schema and indexes |\n",
			num(float64(r.contacts)), float64(r.bytes)/1e6, perRow(*r))
	}
	for _, s := range h.sizes {
		if s.contacts > 0 {
			cmp := ""
			if r := h.rawSize; r != nil {
				cmp = "; " + times(perRow(s), perRow(*r)) + " the raw rows' size"
			}
			w("| database size, %s | - | - | - | - | - | - | %s contacts in %.1f MB: %.0f bytes per stored contact%s |\n",
				s.where, num(float64(s.contacts)), float64(s.bytes)/1e6, perRow(s), cmp)
		}
	}
}

func fillDescription(mode string) string {
	if mode == "api" {
		return "through operation A, 1000 contacts per request, 16 clients"
	}
	return "direct SQL on the stopped server's database, copying a contact row and its import row that dialbox stored through operation A, with only id, phone and import id varied, so every column and index is what the API writes"
}

func verdict(ok bool) string {
	if ok {
		return "**PASS**"
	}
	return "**MISS**"
}

// targets are the goals of issue 5, each judged on this run's figures.
func (h *Harness) targets() []string {
	top := h.o.concs[len(h.o.concs)-1]
	var out []string
	missing := func(what, why string) { out = append(out, fmt.Sprintf("**NOT MEASURED** %s: %s", what, why)) }

	what := fmt.Sprintf("op A, 100 contacts/request @%d >= 50%% of raw SQLite inserts of the same rows", top)
	a100 := h.got(fmt.Sprintf("A100@%d", top))
	raw, rawName := h.rawLimit()
	if a100 != nil && raw != nil {
		line := fmt.Sprintf("%s %s: %s contacts/s = %s of %s (%s rows/s), durable", verdict(a100.Units >= 0.5*raw.Units),
			what, num(a100.Units), pct(a100.Units, raw.Units), rawName, num(raw.Units))
		if seq := h.got("rawseq1000"); seq != nil {
			line += fmt.Sprintf("; %s of raw inserts of ascending phones (%s rows/s), whose phone index grows only at its end", pct(a100.Units, seq.Units), num(seq.Units))
		}
		out = append(out, line)
	} else {
		missing(what, "a step is missing")
	}
	what = fmt.Sprintf("op A, 100 contacts/request @%d >= 0.5x raw SQLite inserts of the same rows into a bare one-index contacts table", top)
	if bare := h.got("rawbare1000"); a100 != nil && bare != nil {
		out = append(out, fmt.Sprintf("%s %s: %s contacts/s = %.2fx %s rows/s, durable", verdict(a100.Units >= 0.5*bare.Units),
			what, num(a100.Units), a100.Units/bare.Units, num(bare.Units)))
	} else {
		missing(what, "a step is missing")
	}

	bB := h.got(fmt.Sprintf("B@%d", top))
	bare := h.got(fmt.Sprintf("bare@%d", top))
	what = fmt.Sprintf("op B @%d >= 40%% of bare net/http", top)
	if bB != nil && bare != nil {
		out = append(out, fmt.Sprintf("%s %s: %s req/s = %s of %s req/s", verdict(bB.Req >= 0.4*bare.Req), what, num(bB.Req), pct(bB.Req, bare.Req), num(bare.Req)))
	} else {
		missing(what, "a step is missing")
	}
	what = fmt.Sprintf("op B @%d >= 3x the fastest peer", top)
	if fp, name := h.fastestPeer("B", top); bB != nil && fp > 0 {
		out = append(out, fmt.Sprintf("%s %s: %s req/s = %s %s (%s req/s)", verdict(bB.Req >= 3*fp), what, num(bB.Req), times(bB.Req, fp), name, num(fp)))
	} else {
		missing(what, "no peer was measured")
	}
	what = fmt.Sprintf("op A, 1 contact/request @%d (durable) >= 0.6x the fastest peer's rate (stretch: 1x)", top)
	a1 := h.got(fmt.Sprintf("A1@%d", top))
	if fp, name := h.fastestPeer("A1", top); a1 != nil && fp > 0 {
		out = append(out, fmt.Sprintf("%s %s: %s req/s = %.2fx %s (%s req/s, stores nothing)", verdict(a1.Req >= 0.6*fp), what, num(a1.Req), a1.Req/fp, name, num(fp)))
	} else {
		missing(what, "no peer was measured")
	}
	// Not a target, the figure behind it: what a request costs the server.
	if a1 != nil && bare != nil && a1.Req > 0 && bare.Req > 0 && a1.Cores > 0 && bare.Cores > 0 {
		out = append(out, fmt.Sprintf("**FIGURE** op A, 1 contact/request @%d: %.0f µs of server CPU a request (bare net/http: %.0f µs)",
			top, 1e6*a1.Cores/a1.Req, 1e6*bare.Cores/bare.Req))
	}
	what = fmt.Sprintf("op A with %s contacts stored >= 80%% of the fresh database's rate (100/request @%d)", short(h.o.fill2), top)
	g0 := h.got(fmt.Sprintf("g0:A100@%d", top))
	if g := h.got(fmt.Sprintf("g2:A100@%d", top)); g != nil && g0 != nil {
		out = append(out, fmt.Sprintf("%s %s: %s contacts/s = %s of %s", verdict(g.Units >= 0.8*g0.Units), what, num(g.Units), pct(g.Units, g0.Units), num(g0.Units)))
	} else {
		missing(what, "a step is missing")
	}
	what = "webhook delivery >= 5,000 deliveries/s draining a backlog"
	if wh := h.webhook; wh != nil && wh.Drained > 0 {
		out = append(out, fmt.Sprintf("%s %s: %s deliveries/s (%s of the target)", verdict(wh.DrainRate >= 5000), what, num(wh.DrainRate), pct(wh.DrainRate, 5000)))
	} else {
		missing(what, h.webhookSkip)
	}
	what = "webhook delivery >= 5,000 deliveries/s while the engine makes the calls (a burst)"
	if wh := h.webhook; wh != nil && wh.Live > 0 {
		out = append(out, fmt.Sprintf("%s %s: %s deliveries/s (%s of the target); the engine's calls made %s/s due",
			verdict(wh.LiveRate >= 5000), what, num(wh.LiveRate), pct(wh.LiveRate, 5000), num(wh.EngineRate)))
	} else {
		missing(what, h.webhookSkip)
	}
	out = append(out, h.pgTargets(top, missing)...)
	what = "peak resident memory < 150 MB"
	if h.peakRSS > 0 {
		out = append(out, fmt.Sprintf("%s %s: %.1f MB during %s", verdict(h.peakRSS < 150), what, h.peakRSS, h.peakRSSWhere))
	} else {
		missing(what, "not read")
	}
	return out
}

func dupNote(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; **%d duplicate deliveries** (a webhook-id received twice)", n)
}

// headline is the short table: dialbox's main figures beside the limit and
// the fastest peer of the same step.
func (h *Harness) headline(w func(string, ...any)) {
	top := h.o.concs[len(h.o.concs)-1]
	w("\n### Headline\n\n")
	w("| At %d clients | dialbox | Limit on this machine | Fastest peer |\n|---|---:|---|---|\n", top)
	peer := func(step string, v float64) string {
		fp, name := h.fastestPeer(step, top)
		if fp == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%s %s req/s (dialbox %s)", name, num(fp), times(v, fp))
	}
	bare := h.got(fmt.Sprintf("bare@%d", top))
	raw, rawName := h.rawLimit()
	if b := h.got(fmt.Sprintf("B@%d", top)); b != nil {
		lim := "-"
		if bare != nil {
			lim = fmt.Sprintf("bare net/http %s req/s (dialbox %s)", num(bare.Req), pct(b.Req, bare.Req))
		}
		w("| op B, list scenarios | %s req/s, p99 %s | %s | %s |\n", num(b.Req), lat(b.P99), lim, peer("B", b.Req))
	}
	if a := h.got(fmt.Sprintf("A1@%d", top)); a != nil {
		lim := "-"
		if bare != nil {
			lim = fmt.Sprintf("bare net/http %s req/s (dialbox %s)", num(bare.Req), pct(a.Req, bare.Req))
		}
		w("| op A, 1 contact/request, durable | %s req/s, p99 %s | %s | %s |\n", num(a.Req), lat(a.P99), lim, peer("A1", a.Req))
	}
	for _, n := range []int{100, 1000} {
		if a := h.got(fmt.Sprintf("A%d@%d", n, top)); a != nil {
			lim := "-"
			if raw != nil {
				lim = fmt.Sprintf("%s %s rows/s (dialbox %s)", rawName, num(raw.Units), pct(a.Units, raw.Units))
			}
			w("| op A, %d contacts/request, durable | %s contacts/s, p99 %s | %s | stores nothing |\n", n, num(a.Units), lat(a.P99), lim)
		}
	}
	if a := h.got(fmt.Sprintf("pg:A100@%d", top)); a != nil {
		lim := "-"
		if raw, rawName := h.pgRawLimit(); raw != nil {
			lim = fmt.Sprintf("%s %s rows/s (dialbox %s)", rawName, num(raw.Units), pct(a.Units, raw.Units))
		}
		w("| op A, 100 contacts/request, durable, on PostgreSQL | %s contacts/s, p99 %s | %s | stores nothing |\n", num(a.Units), lat(a.P99), lim)
	}
	if g := h.got(fmt.Sprintf("g2:A100@%d", top)); g != nil {
		if g0 := h.got(fmt.Sprintf("g0:A100@%d", top)); g0 != nil {
			w("| op A, 100 contacts/request, %s contacts stored | %s contacts/s | %s of the same step on a fresh database | - |\n",
				short(h.o.fill2), num(g.Units), pct(g.Units, g0.Units))
		}
	}
	if wh := h.webhook; wh != nil {
		w("| webhook deliveries | %s/s draining a backlog, %s/s in a burst | target 5,000/s | - |\n", num(wh.DrainRate), num(wh.LiveRate))
		w("| webhook latency, call end to delivery | p50 %s, p99 %s at %s deliveries/s | - | - |\n", lat(wh.P50), lat(wh.P99), num(wh.PacedRate))
	}
	if h.peakRSS > 0 {
		w("| peak resident memory | %.0f MB | target 150 MB | - |\n", h.peakRSS)
	}
	if d, lim := h.sipGot("sip:dialbox"), h.sipGot("sip:sipp"); d != nil {
		cmp := "-"
		if lim != nil {
			cmp = fmt.Sprintf("sipp calling sipp %s calls/s (dialbox %s)", num(lim.Wire.SetupRate), pct(d.Wire.SetupRate, lim.Wire.SetupRate))
		}
		w("| SIP calls with audio, dialbox to sipp (offered %.0f/s) | %s calls/s set up, %d held at once, RTP interval p99 %s | %s | - |\n",
			d.Rate, num(d.Wire.SetupRate), d.Wire.PeakHeld, lat(d.Wire.RTPP99), cmp)
	}
	if n := len(h.sizes); n > 0 && h.sizes[n-1].contacts > 0 {
		last := h.sizes[n-1]
		lim := "-"
		if r := h.rawSize; r != nil {
			lim = fmt.Sprintf("raw rows %.0f bytes", float64(r.bytes)/float64(r.contacts))
		}
		w("| database size per stored contact | %.0f bytes (%s contacts) | %s | - |\n", float64(last.bytes)/float64(last.contacts), short(last.contacts), lim)
	}
}

// crossCheckSection sets the wrk figures next to the harness's own.
func (h *Harness) crossCheckSection(w func(string, ...any)) {
	if !h.o.wrk {
		return
	}
	w("\n### %s\n\n", h.section("Cross-check with wrk"))
	if h.wrkSkip != "" {
		w("Not run: %s.\n", h.wrkSkip)
		return
	}
	if h.wrkBin == "" {
		w("Not run: none of the cross-checked steps was measured.\n")
		return
	}
	w("Right after the harness's own step, the same request at the same concurrency for the same time, sent by %s (`wrk -t2 -c64 --latency`, a Lua script for method, headers and body). Only 2xx answers count.\n\n", wrkVersion(h.wrkBin))
	w("| Step | Harness req/s | wrk req/s | wrk p50 | wrk p99 | Server CPU | wrk / harness |\n")
	w("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, k := range h.order {
		c := h.points[k]
		own, ok := strings.CutPrefix(k, "wrk:")
		if !ok {
			continue
		}
		p := h.points[own]
		if c.Skipped != "" || p == nil {
			w("| %s | - | - | - | - | - | skipped: %s |\n", c.Label, strings.ReplaceAll(c.Skipped, "|", "/"))
			continue
		}
		errs := ""
		if c.Errors > 0 {
			errs = fmt.Sprintf(" (**%d errors**: %.60s)", c.Errors, c.ErrMsg)
		}
		w("| %s | %s | %s | %s | %s | %.2f | %s%s |\n", p.Label, num(p.Req), num(c.Req), lat(c.P50), lat(c.P99), c.Cores, pct(c.Req, p.Req), errs)
	}
	top := h.o.concs[len(h.o.concs)-1]
	bare, b, a1 := h.got(fmt.Sprintf("wrk:bare@%d", top)), h.got(fmt.Sprintf("wrk:B@%d", top)), h.got(fmt.Sprintf("wrk:A1@%d", top))
	var ratios []string
	if bare != nil && b != nil {
		ratios = append(ratios, fmt.Sprintf("op B = %s of bare net/http", pct(b.Req, bare.Req)))
	}
	for _, step := range []struct {
		p    *Point
		name string
	}{{b, "B"}, {a1, "A1"}} {
		best, name := 0.0, ""
		for _, peer := range peers {
			if q := h.got(fmt.Sprintf("wrk:peer:%s:%s@%d", peer.Name, step.name, top)); q != nil && q.Req > best {
				best, name = q.Req, peer.Name
			}
		}
		if step.p != nil && best > 0 {
			ratios = append(ratios, fmt.Sprintf("op %s = %s %s", strings.TrimSuffix(step.name, "1")+map[string]string{"B": "", "A1": " (1 contact)"}[step.name], times(step.p.Req, best), name))
		}
	}
	if len(ratios) > 0 {
		w("\nThe headline ratios with wrk's figures at %d clients: %s.\n", top, strings.Join(ratios, "; "))
	}
}

// profileShow picks, out of a CPU profile, the frames that say where a
// request's time goes: dialbox's own functions, net/http's reading and
// writing, the SQL statements and commit, phone parsing, JSON, the access
// log, system calls and the garbage collector.
const profileShow = `^main\.|^dialbox/internal/|^net/http\.\(\*conn\)\.(serve|readRequest)$|^net/http\.\(\*response\)\.finishRequest$|` +
	`^database/sql\.\(\*Tx\)\.Commit$|^modernc.org/sqlite\.\(\*stmt\)\.(query|exec)$|` +
	`^github.com/nyaruka/phonenumbers\.(Parse|IsValidNumber)$|^github.com/golang-jwt/jwt/v5\.\(\*Parser\)\.Parse$|` +
	`^encoding/json\.(Unmarshal|Marshal)$|^log/slog\.\(\*Logger\)\.LogAttrs$|^syscall\.(read|write)$|^runtime\.gcBgMarkWorker$`

// profileSection lists, for each CPU profile taken (-cpuprofile), where the
// time went, as go tool pprof reads it.
func (h *Harness) profileSection(w func(string, ...any)) {
	if len(h.profiles) == 0 {
		return
	}
	w("\n### Where the CPU went\n\n")
	w("Each list is `go tool pprof -top -cum -nodecount=30 -show=<frames>` of the profile named, taken during the measured part of the step: cumulative time is the time in a frame and everything it calls, in seconds of CPU over the step, all cores together; the frames kept are dialbox's own, net/http's reading and writing, the SQL statements and commit, phone parsing, token checks, JSON, the access log, system calls and the garbage collector.\n")
	for _, f := range h.profiles {
		out, err := exec.Command("go", "tool", "pprof", "-top", "-cum", "-nodecount=30", "-show="+profileShow, f).Output()
		w("\n#### %s\n\n", filepath.Base(f))
		if err != nil {
			w("go tool pprof failed: %v\n", err)
			continue
		}
		// From the totals line on: the header before it names temporary files.
		text := string(out)
		if i := strings.Index(text, "Duration:"); i >= 0 {
			text = text[i:]
		}
		if i := strings.Index(text, "\nActive filters:"); i >= 0 {
			if j := strings.Index(text, "\nShowing nodes"); j > i {
				text = text[:i] + text[j:]
			}
		}
		w("```\n%s```\n", text)
	}
}

// writeBetween puts body between the begin and end markers of the file at
// path, keeping everything outside them; a missing file is created with
// just the markers and body.
func writeBetween(path, begin, end, body string) error {
	doc, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		doc, err = []byte("# dialbox benchmarks\n\n"+begin+"\n"+end+"\n"), nil
	}
	if err != nil {
		return err
	}
	out, err := replaceBetween(string(doc), begin, end, body)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// replaceBetween returns doc with what lies between the begin and end
// markers replaced by body. Each marker must be there exactly once, begin
// first, so a hand edit that lost one is reported rather than guessed at.
func replaceBetween(doc, begin, end, body string) (string, error) {
	if n := strings.Count(doc, begin); n != 1 {
		return "", fmt.Errorf("want the marker %s once, found it %d times", begin, n)
	}
	if n := strings.Count(doc, end); n != 1 {
		return "", fmt.Errorf("want the marker %s once, found it %d times", end, n)
	}
	i, j := strings.Index(doc, begin)+len(begin), strings.Index(doc, end)
	if j < i {
		return "", fmt.Errorf("the marker %s comes before %s", end, begin)
	}
	return doc[:i] + "\n" + strings.Trim(body, "\n") + "\n" + doc[j:], nil
}
