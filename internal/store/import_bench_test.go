package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"dialbox/internal/domain"

	dto "github.com/prometheus/client_model/go"
)

// BenchmarkImport is the SQLite writer's cost per contact and per import,
// as operation A meets it (docs/benchmarks.md#the-writers-cpu-per-contact):
// 64 importers at once, so the writer commits their imports in groups,
// into a scenario that allows duplicate phones, bodies drawn from eight of
// Vietnamese mobile numbers. Besides the time per contact it reports the
// process's CPU per contact (cpu-µs/contact), a steadier figure than
// throughput on a shared machine. Run with a fixed count, e.g. -benchtime
// 3000x: the database grows with it.
//
// repeats=100: a scenario that forbids repeated phones, and the same eight
// bodies again and again, so that after the first round every contact is
// refused as pending already and recorded as skipped. unique=100: such a
// scenario, phones drawn afresh for every body (a repeat is rare), so
// nearly every contact goes into the pending-phone index, keyed by the
// phone.
func BenchmarkImport(b *testing.B) {
	for _, n := range []int{100, 1} {
		b.Run(fmt.Sprintf("contacts=%d", n), func(b *testing.B) { benchImport(b, n, false, 8) })
	}
	b.Run("repeats=100", func(b *testing.B) { benchImport(b, 100, true, 8) })
	b.Run("unique=100", func(b *testing.B) { benchImport(b, 100, true, b.N) })
}

// benchImport imports bodies of n contacts, drawn from k of them.
func benchImport(b *testing.B, n int, unique bool, k int) {
	app := tenant()
	app.Scenarios[0].CallConfig.AllowDuplicatePhone = !unique
	s := openSQLite(b, app)
	bodies := benchBodies(n, k)
	b.SetParallelism(32) // 64 importers on 2 cores
	start := cpuTime(b)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		k := 0
		for pb.Next() {
			req := domain.ImportRequest{AppID: app.ID, ScenarioID: "sc", MaxQueued: 1 << 40, UniquePhone: unique}
			for i, c := range bodies[k%len(bodies)] {
				c.ID = domain.NewV7()
				c.Position = i
				req.Contacts = append(req.Contacts, c)
			}
			k++
			if _, err := s.Import(context.Background(), req, time.Now()); err != nil && !errors.Is(err, domain.ErrAllInvalid) {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	contacts := float64(b.N * n)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/contacts, "ns/contact")
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/contacts, "cpu-µs/contact")
	var m dto.Metric
	if err := s.metrics.commits.jobs.Write(&m); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(m.GetHistogram().GetSampleSum()/float64(m.GetHistogram().GetSampleCount()), "jobs/commit")
}

// benchBodies are k bodies of n contacts, as the harness sends them.
func benchBodies(n, k int) [][]domain.NewContact {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(k)))
	prefixes := []string{"+8490", "+8491", "+8493", "+8494", "+8496", "+8497", "+8498"}
	names := []string{"Nguyen Van A", "Tran Thi B", "Le Van C", "Pham Thi D", "Hoang Van E"}
	out := make([][]domain.NewContact, k)
	for j := range out {
		for range n {
			phone := prefixes[rng.IntN(len(prefixes))] + fmt.Sprintf("%07d", rng.IntN(10_000_000))
			fields, _ := json.Marshal(map[string]string{"danh_xung": "Anh", "ho_ten": names[rng.IntN(len(names))], "so_dien_thoai": phone})
			out[j] = append(out[j], domain.NewContact{Phone: phone, Fields: fields})
		}
	}
	return out
}

// cpuTime is the CPU the process has used so far, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
