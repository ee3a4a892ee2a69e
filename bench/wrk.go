package main

// The cross-check: the steps the headline rests on, driven a second time by
// wrk (an independent load generator, from Debian's packages) right after
// the harness's own step, so a reader can see that the figures do not come
// from the harness's client.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// wrkRequest is one request as wrk sends it: a Lua script sets what the
// command line cannot (method, body).
type wrkRequest struct {
	addr, method, path, token string
	body                      []byte
}

// findWrk returns the wrk binary, installing the Debian package when it is
// missing and the harness runs as root; the error says why there is none.
func findWrk() (string, error) { return aptTool("wrk", "wrk") }

// aptTool returns the path of the command bin, installing the Debian
// package pkg when it is missing and the harness runs as root; the error
// says why there is none.
func aptTool(bin, pkg string) (string, error) {
	if p, err := exec.LookPath(bin); err == nil {
		return p, nil
	}
	if err := aptInstall(bin, pkg); err != nil {
		return "", err
	}
	return exec.LookPath(bin)
}

// aptInstall installs the Debian package pkg (which brings what) when the
// harness runs as root; the error says why it could not.
func aptInstall(what, pkg string) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s is not installed (apt-get install %s) and the harness is not root", what, pkg)
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return fmt.Errorf("%s is not installed and there is no apt-get", what)
	}
	logf("installing %s with apt-get", pkg)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	install := func() error {
		cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "-q", pkg)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get install %s: %v: %s", pkg, err, lastLine(string(out)))
		}
		return nil
	}
	if install() != nil { // the package lists may be missing on a fresh machine
		if out, err := exec.CommandContext(ctx, "apt-get", "update", "-q").CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get update: %v: %s", err, lastLine(string(out)))
		}
		return install()
	}
	return nil
}

var (
	wrkTotal    = regexp.MustCompile(`(\d+) requests in ([0-9.]+)(us|ms|s|m),`)
	wrkNon2xx   = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)`)
	wrkSocket   = regexp.MustCompile(`Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkLatency  = regexp.MustCompile(`(?m)^\s+(50|99)(?:\.000)?%\s+([0-9.]+)(us|ms|s)\s*$`)
	wrkDuration = map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second, "m": time.Minute}
)

// runWrk drives r with conc connections (2 threads, the machine's cores)
// for dur and returns the good requests per second and the latencies.
func runWrk(bin, scratch string, r wrkRequest, conc int, dur time.Duration) (Result, error) {
	if err := checkLoopback(r.addr); err != nil {
		return Result{}, err
	}
	script := filepath.Join(scratch, "wrk-request.lua")
	lua := fmt.Sprintf("wrk.method = %q\n", r.method)
	if r.token != "" {
		lua += fmt.Sprintf("wrk.headers[\"Authorization\"] = %q\n", "Bearer "+r.token)
	}
	if r.body != nil {
		lua += fmt.Sprintf("wrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.body = %s\n", luaString(r.body))
	}
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		return Result{}, err
	}
	secs := max(int(dur.Seconds()), 1)
	ctx, cancel := context.WithTimeout(context.Background(), dur+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-t2", "-c"+strconv.Itoa(conc), "-d"+strconv.Itoa(secs)+"s",
		"--timeout", "10s", "--latency", "-s", script, "http://"+r.addr+r.path).CombinedOutput()
	if err != nil {
		return Result{}, fmt.Errorf("wrk: %v: %s", err, lastLine(string(out)))
	}
	return parseWrk(string(out), conc)
}

func parseWrk(out string, conc int) (Result, error) {
	res := Result{Conc: conc}
	m := wrkTotal.FindStringSubmatch(out)
	if m == nil {
		return res, fmt.Errorf("wrk: no request count in its output: %s", lastLine(out))
	}
	total, _ := strconv.ParseInt(m[1], 10, 64)
	secs, _ := strconv.ParseFloat(m[2], 64)
	res.Elapsed = time.Duration(secs * float64(wrkDuration[m[3]]))
	if m := wrkNon2xx.FindStringSubmatch(out); m != nil {
		res.Errors, _ = strconv.ParseInt(m[1], 10, 64)
		res.ErrMsg = "non-2xx responses"
	}
	if m := wrkSocket.FindStringSubmatch(out); m != nil {
		for _, s := range m[1:] {
			n, _ := strconv.ParseInt(s, 10, 64)
			res.Errors += n
		}
		res.ErrMsg = strings.TrimSpace(m[0])
	}
	res.OK = total - res.Errors
	for _, m := range wrkLatency.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		d := time.Duration(v * float64(wrkDuration[m[3]]))
		if m[1] == "50" {
			res.P50 = d
		} else {
			res.P99 = d
		}
	}
	if res.Elapsed <= 0 {
		return res, errors.New("wrk: no duration in its output")
	}
	return res, nil
}

// luaString quotes b as a Lua long string (no escapes to get wrong).
func luaString(b []byte) string {
	eq := ""
	for strings.Contains(string(b), "]"+eq+"]") {
		eq += "="
	}
	return "[" + eq + "[" + string(b) + "]" + eq + "]"
}

// crossCheck runs a step again with wrk, when the cross-check is on and
// conc is the step's top concurrency, and records it under "wrk:"+key.
func (h *Harness) crossCheck(key, label string, r wrkRequest, conc int) {
	if !h.o.wrk || conc != h.o.concs[len(h.o.concs)-1] {
		return
	}
	if h.wrkBin == "" && h.wrkSkip == "" {
		var err error
		if h.wrkBin, err = findWrk(); err != nil {
			h.wrkSkip = err.Error()
			logf("cross-check skipped: %s", h.wrkSkip)
		}
	}
	if h.wrkBin == "" {
		return
	}
	h.add(h.measure("wrk:"+key, label+" (wrk)", conc, func() (Result, error) {
		return runWrk(h.wrkBin, h.scratch, r, conc, h.o.dur)
	}))
}

// wrkVersion is the first line wrk prints about itself.
func wrkVersion(bin string) string {
	out, _ := exec.Command(bin, "-v").CombinedOutput()
	line, _ := bufio.NewReader(strings.NewReader(string(out))).ReadString('\n')
	line, _, _ = strings.Cut(line, " Copyright")
	return strings.TrimSpace(line)
}
