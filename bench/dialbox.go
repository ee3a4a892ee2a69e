package main

// Building, configuring and driving the dialbox binary under test.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The bench tenant: postpaid (no balance checks get in the way of the
// measurement), one ACTIVE scenario that accepts repeated phones, a pool of
// hotlines, and nine more scenarios so operation B answers a full page of
// ten.
const (
	benchAPIKey     = "bench-key"
	benchAPISecret  = "bench-secret-5d1f0c2a9e7b4c68a3f1"
	benchScenarioID = "sc-bench"
	benchPool       = "POOL_BENCH"
)

// fixturesTOML is the fixtures file of the bench tenant; webhookURL, when
// set, adds an endpoint for both events.
func fixturesTOML(webhookURL string, maxConcurrent, hotlines int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `[[applications]]
name = "Bench tenant"
api_key = %q
api_secret = %q
  [applications.wallet]
  prepaid = false
  [[applications.hotline_pools]]
  key = %q
  numbers = [`, benchAPIKey, benchAPISecret, benchPool)
	for i := 0; i < hotlines; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", fmt.Sprintf("028730%05d", i+1))
	}
	b.WriteString("]\n")
	fmt.Fprintf(&b, `  [[applications.scenarios]]
  id = %q
  name = "Bench reminder"
  description = "Scenario the benchmark imports into"
  status = "ACTIVE"
  content = "Xin chào {{danh_xung}} {{ho_ten}}, đây là cuộc gọi nhắc thanh toán."
  personalized_fields = ["danh_xung", "ho_ten"]
    [applications.scenarios.call_config]
    pool_hotline_key = %q
    max_concurrent = %d
    allow_duplicate_phone = true
      [applications.scenarios.call_config.call_window]
      start = "00:00"
      end = "24:00"
`, benchScenarioID, benchPool, maxConcurrent)
	statuses := []string{"DRAFT", "REVIEWING", "REJECT", "ACTIVE"}
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, `  [[applications.scenarios]]
  id = "sc-other-%d"
  name = "Other scenario %d"
  description = "Another scenario of the tenant, listed by operation B"
  status = %q
  content = "Xin chào {{ho_ten}}."
  personalized_fields = ["ho_ten"]
    [applications.scenarios.call_config]
    pool_hotline_key = %q
`, i, i, statuses[i%len(statuses)], benchPool)
	}
	if webhookURL != "" {
		fmt.Fprintf(&b, `  [[applications.webhooks]]
  url = %q
  secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
  events = ["call.completed", "contact.completed"]
`, webhookURL)
	}
	return b.String()
}

// benchToken is the ACCESS_TOKEN a customer of the bench tenant makes.
func benchToken() (string, error) {
	return jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
		"apiKey": benchAPIKey,
		"iat":    time.Now().Unix(),
	}).SignedString([]byte(benchAPISecret))
}

// buildDialbox builds the repository's dialbox into dir: the working tree,
// or with rev a commit exported with git archive. With profile, it builds a
// copy of the source with one extra file that writes CPU profiles on
// signals (the repository itself is not changed).
func buildDialbox(repo, dir, rev string, profile bool) (string, error) {
	out := filepath.Join(dir, "dialbox")
	src := repo
	if rev != "" {
		src = filepath.Join(dir, "src-"+strings.NewReplacer("/", "_", ".", "_").Replace(rev))
		if err := os.MkdirAll(src, 0o755); err != nil {
			return "", err
		}
		cmd := exec.Command("sh", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "sh", repo, rev, src)
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git archive %s: %v\n%s", rev, err, b)
		}
	}
	if profile {
		repo = src
		out = filepath.Join(dir, "dialbox-prof")
		src = filepath.Join(dir, "dialbox-prof-src")
		if err := copyRootPackage(repo, src); err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(src, "zz_bench_profile.go"), []byte(profileHook), 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build in %s: %v\n%s", src, err, b)
	}
	return out, nil
}

// copyRootPackage copies the files of the root package (no tests, no
// sub-directories, no databases or binaries), go.mod/go.sum, and the
// files of internal/ but tests and test data: its packages embed pages,
// templates and static files.
func copyRootPackage(repo, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	err := filepath.WalkDir(filepath.Join(repo, "internal"), func(path string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() && e.Name() == "testdata" {
			return filepath.SkipDir
		}
		if err != nil || !e.Type().IsRegular() || strings.HasSuffix(path, "_test.go") {
			return err
		}
		rel, err := filepath.Rel(repo, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(repo)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, ".") {
			continue
		}
		ext := filepath.Ext(name)
		if ext != ".go" && ext != ".sql" && ext != ".toml" && ext != ".json" && ext != ".yaml" &&
			ext != ".html" && ext != ".txt" && ext != ".md" && name != "go.mod" && name != "go.sum" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(repo, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// profileHook is added to the profiling copy of dialbox: SIGUSR1 starts a
// CPU profile into the file named in $BENCH_PROFILE_DIR/next (and block and
// mutex profiling), SIGUSR2 stops it, writes the block, mutex and heap
// (live at the last GC, under load) profiles beside it and then
// $BENCH_PROFILE_DIR/done.
const profileHook = `package main

import (
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"
)

func init() {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" {
		return
	}
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		var f, tf *os.File
		var name string
		for s := range ch {
			switch {
			case s == syscall.SIGUSR1 && f == nil:
				b, err := os.ReadFile(filepath.Join(dir, "next"))
				if err != nil {
					continue
				}
				name = strings.TrimSpace(string(b))
				if f, err = os.Create(name); err != nil {
					f = nil
					continue
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					f.Close()
					f = nil
					continue
				}
				// Where goroutines wait (channels, locks, the connection
				// pool) and which locks are contended, from now on; the
				// profiles are cumulative, so a snapshot now is the base
				// (go tool pprof -base X.block-base.pprof X.block.pprof).
				base := strings.TrimSuffix(name, ".pprof")
				for _, p := range []string{"block", "mutex"} {
					if out, err := os.Create(base + "." + p + "-base.pprof"); err == nil {
						pprof.Lookup(p).WriteTo(out, 0)
						out.Close()
					}
				}
				runtime.SetBlockProfileRate(10000)
				runtime.SetMutexProfileFraction(5)
				if os.Getenv("BENCH_TRACE") != "" {
					if tf, err = os.Create(base + ".trace"); err == nil {
						if trace.Start(tf) != nil {
							tf.Close()
							tf = nil
						}
					}
				}
			case s == syscall.SIGUSR2 && f != nil:
				if tf != nil {
					trace.Stop()
					tf.Close()
					tf = nil
				}
				pprof.StopCPUProfile()
				f.Close()
				f = nil
				base := strings.TrimSuffix(name, ".pprof")
				for _, p := range []string{"block", "mutex", "heap"} {
					if out, err := os.Create(base + "." + p + ".pprof"); err == nil {
						pprof.Lookup(p).WriteTo(out, 0)
						out.Close()
					}
				}
				runtime.SetBlockProfileRate(0)
				runtime.SetMutexProfileFraction(0)
				os.WriteFile(filepath.Join(dir, "done"), []byte("ok"), 0o644)
			}
		}
	}()
}
`

// traceOn adds execution traces to the profiles (-trace).
var traceOn bool

// Dialbox is one running dialbox.
type Dialbox struct {
	*Proc
	Addr       string
	Token      string
	profileDir string
}

// hermeticEnv drops DIALBOX_* variables so the caller's environment cannot
// change the configuration under test.
func hermeticEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DIALBOX_") {
			k, _, _ := strings.Cut(kv, "=")
			out = append(out, k+"=")
		}
	}
	return out
}

// StartDialbox starts bin on a free loopback port and waits until
// operation B answers.
func StartDialbox(bin, name, scratch, db, fixtures, config, profileDir string) (*Dialbox, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{"serve", "--listen", addr, "--database", db, "--fixtures", fixtures}
	if config != "" {
		args = append(args, "--config", config)
	}
	env := hermeticEnv()
	if profileDir != "" {
		env = append(env, "BENCH_PROFILE_DIR="+profileDir)
		if traceOn {
			env = append(env, "BENCH_TRACE=1")
		}
	}
	p, err := StartProc(name, filepath.Join(scratch, name+".log"), env, bin, args...)
	if err != nil {
		return nil, err
	}
	token, err := benchToken()
	if err != nil {
		p.Stop(5 * time.Second)
		return nil, err
	}
	d := &Dialbox{Proc: p, Addr: addr, Token: token, profileDir: profileDir}
	if err := p.WaitReady(60*time.Second, func() error { return probeHTTP(addr, d.opB(), 200) }); err != nil {
		p.Stop(5 * time.Second)
		return nil, err
	}
	return d, nil
}

// PeakRSSMB is the process's peak resident set so far (VmHWM), in MB.
func (d *Dialbox) PeakRSSMB() float64 {
	kb, err := procStatusKB(d.Cmd.Process.Pid, "VmHWM")
	if err != nil {
		return 0
	}
	return float64(kb) / 1024
}

// StartProfile starts a CPU profile into file (profiling build only).
func (d *Dialbox) StartProfile(file string) error {
	if d.profileDir == "" {
		return nil
	}
	os.Remove(filepath.Join(d.profileDir, "done"))
	if err := os.WriteFile(filepath.Join(d.profileDir, "next"), []byte(file), 0o644); err != nil {
		return err
	}
	return d.Cmd.Process.Signal(syscall.SIGUSR1)
}

// StopProfile stops the CPU profile and waits until it is written.
func (d *Dialbox) StopProfile() error {
	if d.profileDir == "" {
		return nil
	}
	if err := d.Cmd.Process.Signal(syscall.SIGUSR2); err != nil {
		return err
	}
	for i := 0; i < 100; i++ {
		if _, err := os.Stat(filepath.Join(d.profileDir, "done")); err == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("profile not written")
}

func (d *Dialbox) opB() []byte {
	return buildRequest("GET", d.Addr, "/api/v1/public-api/scenarios", d.Token, nil)
}

// opA is a set of prebuilt operation A requests of n contacts each.
func (d *Dialbox) opA(n int) [][]byte {
	bodies := contactBodies(n, 8)
	reqs := make([][]byte, len(bodies))
	for i, b := range bodies {
		reqs[i] = buildRequest("POST", d.Addr, "/api/v1/public-api/scenarios/"+benchScenarioID+"/calls", d.Token, b)
	}
	return reqs
}

// contactBodies makes k request bodies of n contacts with valid Vietnamese
// mobile numbers written the ways customers write them.
func contactBodies(n, k int) [][]byte {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(k)))
	prefixes := []struct {
		p string
		n int // digits after the prefix
	}{{"090", 7}, {"091", 7}, {"093", 7}, {"094", 7}, {"096", 7}, {"097", 7}, {"098", 7}, {"+8490", 7}, {"84912", 6}}
	names := []string{"Nguyen Van A", "Tran Thi B", "Le Van C", "Pham Thi D", "Hoang Van E"}
	out := make([][]byte, k)
	for j := range out {
		var b bytes.Buffer
		b.WriteString(`{"contacts":[`)
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			p := prefixes[rng.IntN(len(prefixes))]
			num := p.p
			for d := 0; d < p.n; d++ {
				num += strconv.Itoa(rng.IntN(10))
			}
			danh := "Anh"
			if i%2 == 1 {
				danh = "Chị"
			}
			fmt.Fprintf(&b, `{"phone_number":%q,"danh_xung":%q,"ho_ten":%q}`, num, danh, names[rng.IntN(len(names))])
		}
		b.WriteString(`]}`)
		out[j] = b.Bytes()
	}
	return out
}

// checkOK accepts a 200 whose body is a success body.
func checkOK(status int, body []byte) (int, bool) {
	return 0, status == 200 && bytes.HasPrefix(body, []byte(`{"status":1`))
}

// checkImport accepts a success body of operation A and counts the
// contact_ids in it: each was durably stored before the answer.
func checkImport(status int, body []byte) (int, bool) {
	if status != 200 || !bytes.HasPrefix(body, []byte(`{"status":1`)) {
		return 0, false
	}
	return bytes.Count(body, []byte(`"contact_id"`)), true
}
