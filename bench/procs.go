package main

// Child processes: every server the harness starts runs in its own process
// group so it (and anything it spawned, such as WireMock's java under node)
// can be stopped as a whole; all of them are stopped when the harness ends,
// fails or is interrupted.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Proc is one started server.
type Proc struct {
	Name string
	Cmd  *exec.Cmd
	Log  string // file with its stdout and stderr

	done    chan struct{}
	waitErr error
}

var (
	procsMu sync.Mutex
	procs   = map[*Proc]bool{}
)

// StartProc starts name with args, output to logPath, in its own process
// group.
func StartProc(name, logPath string, env []string, bin string, args ...string) (*Proc, error) {
	return startProc("", env, name, logPath, bin, args...)
}

// startProc is StartProc in the working folder dir ("": the harness's).
func startProc(dir string, env []string, name, logPath, bin string, args ...string) (*Proc, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Proc{Name: name, Cmd: cmd, Log: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	procsMu.Lock()
	procs[p] = true
	procsMu.Unlock()
	return p, nil
}

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after grace.
func (p *Proc) Stop(grace time.Duration) error {
	procsMu.Lock()
	delete(procs, p)
	procsMu.Unlock()
	if p.Exited() {
		return p.waitErr
	}
	pgid := p.Cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("%s did not stop within %s; killed", p.Name, grace)
	}
	// Anything left in the group (a grandchild that ignored SIGTERM).
	syscall.Kill(-pgid, syscall.SIGKILL)
	var ee *exec.ExitError
	if errors.As(p.waitErr, &ee) && ee.ExitCode() == -1 {
		return nil // ended by our signal
	}
	return p.waitErr
}

// StopAll stops every process still running.
func StopAll() {
	procsMu.Lock()
	list := make([]*Proc, 0, len(procs))
	for p := range procs {
		list = append(list, p)
	}
	procsMu.Unlock()
	var wg sync.WaitGroup
	for _, p := range list {
		wg.Add(1)
		go func() { defer wg.Done(); p.Stop(5 * time.Second) }()
	}
	wg.Wait()
}

// LogTail is the end of a process's log, for error messages.
func (p *Proc) LogTail(n int) string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// WaitReady polls probe until it succeeds, the process ends, or timeout.
func (p *Proc) WaitReady(timeout time.Duration, probe func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("%s exited during start: %v\n%s", p.Name, p.waitErr, p.LogTail(15))
		}
		if last = probe(); last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %s: %v\n%s", p.Name, timeout, last, p.LogTail(15))
}

// probeHTTP sends one request and wants a response with status want (0: any).
func probeHTTP(addr string, req []byte, want int) error {
	c, err := dialClient(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.c.Write(req); err != nil {
		return err
	}
	status, body, _, err := c.readResponse()
	if err != nil {
		return err
	}
	if want != 0 && status != want {
		return fmt.Errorf("HTTP %d: %.300s", status, body)
	}
	return nil
}

// procStatusKB reads a field such as VmHWM (peak resident set) or VmRSS of a
// process from /proc, in kB.
func procStatusKB(pid int, field string) (int64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}

// groupCPU is the CPU time (user + system) used so far by every process of
// process group pgid, read from /proc; a process that already ended is not
// counted (the servers under test run until the end of their steps).
func groupCPU(pgid int) time.Duration {
	return procCPU(func(pid, ppid, pgrp int) bool { return pgrp == pgid || pid == pgid })
}

// treeCPU is groupCPU for a process and its children, for a server whose
// children each lead a process group of their own (PostgreSQL's backends).
func treeCPU(parent int) time.Duration {
	return procCPU(func(pid, ppid, pgrp int) bool { return pid == parent || ppid == parent })
}

// procCPU sums the CPU time of the running processes match selects.
func procCPU(match func(pid, ppid, pgrp int) bool) time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var ticks int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ... ; comm may hold spaces.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pg, _ := strconv.Atoi(f[2])
		if !match(pid, ppid, pg) {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += ut + st
	}
	return time.Duration(ticks) * (time.Second / clockTicks)
}

// clockTicks is USER_HZ, 100 on Linux.
const clockTicks = 100
