package main

// The do-not-call phase (issue 14): a national register of -dnc-numbers
// numbers loaded by `dialbox dnc import`, the loader an operator uses, then
// operation A with that register in the database beside the same step
// without it.

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"
)

// DNCResult is what loading the register took.
type DNCResult struct {
	Numbers   int64 // lines the register file has
	FileBytes int64
	// As the import reported them.
	Lines, Loaded, Duplicate, Bad int64
	Took                          time.Duration // the import command, start to exit
	PeakRSSMB                     float64       // the import process's peak resident memory
	DBGrowth                      int64         // bytes the register added to the database
}

// dncLoadTarget is issue 14's bar for loading a 10-million-number register.
const dncLoadTarget = time.Minute

// The register's numbers: Vietnamese mobile numbers of every carrier's
// prefixes and landlines, each a prefix of its national significant number
// (nine digits for a mobile, ten for a landline) and random digits after
// it, within the ranges the phone library knows to be in use.
var (
	dncMobilePrefixes = []string{
		"86", "96", "97", "98", "32", "33", "34", "35", "36", "37", "38", "39", // Viettel
		"896", "897", "898", "899", "90", "93", "70", "76", "77", "78", "79", // MobiFone
		"88", "91", "94", "81", "82", "83", "84", "85", // VinaPhone
		"92", "56", "58", // Vietnamobile
		"993", "994", "995", "996", "997", "998", "999", "59", // Gmobile
		"87", // iTel
	}
	// Hanoi, Ho Chi Minh City, Da Nang, Hai Phong, Can Tho, Dong Nai, Binh Duong.
	dncLandlines = []string{"243", "246", "283", "287", "236", "225", "292", "251", "274"}
	dncBadLines  = []string{"", "n/a", "0912", "+84 abc 123"}
)

// writeRegister writes a register of n lines, one number a line as a
// carrier's export has them: "84..." (half), "0..." and "+84...", 5%
// landlines, one line in a thousand repeating the line before it and one
// in ten thousand holding no number.
func writeRegister(path string, n int64) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewPCG(14, 91))
	var line, prev []byte
	for i := int64(0); i < n; i++ {
		switch {
		case i%10_000 == 9_999:
			line = append(line[:0], dncBadLines[(i/10_000)%int64(len(dncBadLines))]...)
		case i%1000 == 999 && prev != nil:
			line = append(line[:0], prev...)
		default:
			line = line[:0]
			switch r := rng.IntN(20); {
			case r < 10:
				line = append(line, "84"...)
			case r < 19:
				line = append(line, '0')
			default:
				line = append(line, "+84"...)
			}
			prefix, nsn := dncMobilePrefixes[rng.IntN(len(dncMobilePrefixes))], 9
			if rng.IntN(20) == 0 {
				prefix, nsn = dncLandlines[rng.IntN(len(dncLandlines))], 10
			}
			line = append(line, prefix...)
			for d := len(prefix); d < nsn; d++ {
				line = append(line, byte('0'+rng.IntN(10)))
			}
			prev = append(prev[:0], line...)
		}
		w.Write(line)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return st.Size(), f.Close()
}

// importReport reads `dialbox dnc import`'s report line.
var importReport = regexp.MustCompile(`(\d+) lines, (\d+) numbers loaded, (\d+) duplicate, (\d+) bad`)

// dncPhase loads the register, then measures operation A (100 contacts a
// request, the most clients) on the database without it and on the one
// with it, alternately, twice each (the best of two counts): on a shared
// machine, steps run side by side compare best.
func (h *Harness) dncPhase(fixtures string) error {
	top := h.o.concs[len(h.o.concs)-1]
	without := filepath.Join(h.scratch, "dnc-without.db")
	with := filepath.Join(h.scratch, "dnc-with.db")
	d, err := h.startDialbox("dialbox-dnc-base", without, fixtures, "")
	if err != nil {
		return err
	}
	if err := d.Stop(30 * time.Second); err != nil {
		return fmt.Errorf("dnc: stopping the server that made the database: %w", err)
	}
	defer func() {
		if !h.o.keep {
			removeDB(without)
			removeDB(with)
		}
	}()
	if err := copyDB(without, with); err != nil {
		return err
	}

	file := filepath.Join(h.scratch, "register.txt")
	logf("dnc: writing a register of %s numbers", num(float64(h.o.dncNumbers)))
	r := &DNCResult{Numbers: h.o.dncNumbers}
	if r.FileBytes, err = writeRegister(file, h.o.dncNumbers); err != nil {
		return err
	}
	if !h.o.keep {
		defer os.Remove(file)
	}
	before := dbFilesSize(with)
	logf("dnc: dialbox dnc import (%.0f MB)", float64(r.FileBytes)/1e6)
	logPath := filepath.Join(h.scratch, "dnc-import.log")
	start := time.Now()
	p, err := StartProc("dialbox-dnc-import", logPath, hermeticEnv(), h.bin, "dnc", "import", file, "--database", with)
	if err != nil {
		return err
	}
	<-p.done
	r.Took = time.Since(start)
	p.Stop(time.Second) // already ended: forgets it
	out, _ := os.ReadFile(logPath)
	if p.waitErr != nil {
		return fmt.Errorf("dnc import: %v\n%s", p.waitErr, out)
	}
	m := importReport.FindSubmatch(out)
	if m == nil {
		return fmt.Errorf("dnc import: no report in its output:\n%s", out)
	}
	for i, v := range []*int64{&r.Lines, &r.Loaded, &r.Duplicate, &r.Bad} {
		*v, _ = strconv.ParseInt(string(m[i+1]), 10, 64)
	}
	if ru, ok := p.Cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.PeakRSSMB = float64(ru.Maxrss) / 1024
	}
	r.DBGrowth = dbFilesSize(with) - before
	h.dnc = r
	logf("  %s lines: %s loaded, %s duplicate, %s bad in %s (%s numbers/s), peak memory %.0f MB, database +%.0f MB",
		num(float64(r.Lines)), num(float64(r.Loaded)), num(float64(r.Duplicate)), num(float64(r.Bad)),
		r.Took.Round(10*time.Millisecond), num(float64(r.Lines)/r.Took.Seconds()), r.PeakRSSMB, float64(r.DBGrowth)/1e6)

	for round := 0; round < 2; round++ {
		for _, side := range []struct{ tag, db, label string }{
			{"without", without, "no register"},
			{"with", with, short(r.Loaded) + " numbers on the register"},
		} {
			logf("dnc: operation A, %s (round %d of 2)", side.label, round+1)
			d, err := h.startDialbox("dialbox-dnc-"+side.tag, side.db, fixtures, "")
			if err != nil {
				return err
			}
			key := fmt.Sprintf("dnc:%s:A100@%d", side.tag, top)
			prev := h.points[key]
			t := Target{Addr: d.Addr, Reqs: d.opA(100), Check: checkImport}
			p := h.stepFor(h.o.dur, key, fmt.Sprintf("op A, 100 contacts/request @%d, %s (best of 2)", top, side.label), t, top, nil)
			if prev != nil && prev.Units > p.Units {
				h.points[key] = prev
			}
			h.notePeak(d, "operation A with "+side.label)
			if err := d.Stop(30 * time.Second); err != nil {
				return err
			}
		}
	}
	return nil
}

// dncSection reports the phase, with issue 14's two bars judged.
func (h *Harness) dncSection(w func(string, ...any)) {
	w("\n### Do-not-call register\n\n")
	r := h.dnc
	if r == nil {
		w("Not run: %s.\n", h.dncSkip)
		return
	}
	w("A register file of %s lines (%.0f MB: Vietnamese mobile numbers of every carrier's prefixes and 5%% landlines, written `84...`, `0...` or `+84...`, one line in a thousand repeated, one in ten thousand without a number) loaded into a stopped server's database by `dialbox dnc import`, the command an operator runs; then operation A on that database beside the same step on the same database without the register, alternately, best of two each.\n\n",
		num(float64(r.Numbers)), float64(r.FileBytes)/1e6)
	w("| Load | Lines | Loaded | Duplicate | Bad | Took | Numbers/s | Peak memory | Database growth |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	w("| `dialbox dnc import` | %s | %s | %s | %s | %.1f s | %s | %.0f MB | %.0f MB (%.1f bytes a number) |\n",
		num(float64(r.Lines)), num(float64(r.Loaded)), num(float64(r.Duplicate)), num(float64(r.Bad)), r.Took.Seconds(),
		num(float64(r.Lines)/r.Took.Seconds()), r.PeakRSSMB, float64(r.DBGrowth)/1e6, float64(r.DBGrowth)/float64(max(r.Loaded, 1)))
	w("\n")
	if r.Numbers >= 10_000_000 {
		w("- %s load of %s numbers in under a minute: %.1f s\n", verdict(r.Took < dncLoadTarget), short(r.Numbers), r.Took.Seconds())
	} else {
		w("- **NOT MEASURED** load of 10M numbers in under a minute: this run's register had %s (`-dnc-numbers`)\n", num(float64(r.Numbers)))
	}
	top := h.o.concs[len(h.o.concs)-1]
	a, b := h.got(fmt.Sprintf("dnc:without:A100@%d", top)), h.got(fmt.Sprintf("dnc:with:A100@%d", top))
	if a != nil && b != nil {
		w("- %s operation A with the register costs under 5%% of its throughput: %s contacts/s with it, %s without (%s)\n",
			verdict(b.Units >= 0.95*a.Units), num(b.Units), num(a.Units), pct(b.Units, a.Units))
	} else {
		w("- **NOT MEASURED** operation A with the register beside without: a step is missing\n")
	}
}
