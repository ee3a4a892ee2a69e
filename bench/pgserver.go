package main

// The PostgreSQL server of the postgres phase: the one named by -postgres,
// or a throwaway cluster the harness makes as .ci/postgres does
// (docs/postgres.md#running-the-tests): a temporary folder, a free port of
// 127.0.0.1, fsync and synchronous_commit on, run as the postgres user when
// the harness is root (the server refuses root), stopped and removed at the
// end. Every measurement gets a fresh database of its own on it.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgServer is the PostgreSQL server the phase measures on.
type pgServer struct {
	url      string   // its user may create databases
	dir      string   // the throwaway cluster's folder; "" for -postgres
	bin      string   // the cluster's PostgreSQL binaries
	runAs    []string // how to run them (as the postgres user when root)
	pid      int      // the postmaster, parent of every backend, for their CPU; 0 if not local
	dbs      []string // databases made, dropped at the end
	Version  string
	Settings string // what durability it was measured with
}

// pgBinDir is the newest PostgreSQL installed the Debian way.
func pgBinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i]
		}
	}
	return ""
}

// startPgCluster makes and starts a throwaway cluster, installing Debian's
// postgresql first when it is missing and the harness is root.
func startPgCluster() (*pgServer, error) {
	bin := pgBinDir()
	if bin == "" {
		if err := aptInstall("PostgreSQL", "postgresql"); err != nil {
			return nil, err
		}
		if bin = pgBinDir(); bin == "" {
			return nil, errors.New("postgresql installed, but no /usr/lib/postgresql/*/bin/initdb")
		}
	}
	dir, err := os.MkdirTemp("", "dialbox-bench-pg-")
	if err != nil {
		return nil, err
	}
	s := &pgServer{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root, the server needs the postgres user (the postgresql package makes it): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.runAs = []string{"runuser", "-u", "postgres", "--"}
	}
	if out, err := s.run("initdb", "-D", filepath.Join(dir, "data"), "-U", "dialbox", "--auth=trust", "-E", "UTF8", "--locale=C"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %v: %s", err, lastLine(out))
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// Three nodes' pools and the harness's connections, with room to spare.
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on -c max_connections=200", port, dir)
	if out, err := s.run("pg_ctl", "-D", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "server.log"), "-w", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
		s.stop(false)
		return nil, fmt.Errorf("pg_ctl start: %v: %s %s", err, lastLine(out), lastLine(string(log)))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid")); err == nil {
		s.pid, _ = strconv.Atoi(firstLine(string(b)))
	}
	s.url = fmt.Sprintf("postgres://dialbox@127.0.0.1:%d/postgres?sslmode=disable", port)
	return s, s.describe("a throwaway cluster on this machine (initdb's default settings)")
}

// usePgServer is the server of -postgres.
func usePgServer(rawURL string) (*pgServer, error) {
	if _, err := pgx.ParseConfig(rawURL); err != nil {
		return nil, fmt.Errorf("-postgres: %w", err)
	}
	s := &pgServer{url: rawURL}
	return s, s.describe("the server of -postgres (" + redactURL(rawURL) + ")")
}

// describe reads what the server is and how durable its commits are.
func (s *pgServer) describe(where string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var version, fsync, sync, buffers string
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version'), current_setting('fsync'),
		current_setting('synchronous_commit'), current_setting('shared_buffers')`).Scan(&version, &fsync, &sync, &buffers); err != nil {
		return err
	}
	s.Version = "PostgreSQL " + strings.Fields(version)[0]
	s.Settings = fmt.Sprintf("%s: fsync=%s, shared_buffers=%s; every session of dialbox and of the raw inserts sets synchronous_commit=on (the server's default is %s)",
		where, fsync, buffers, sync)
	return nil
}

func (s *pgServer) run(tool string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(s.bin, tool), args...)
	if len(s.runAs) > 0 {
		cmd = exec.Command(s.runAs[0], append(append(s.runAs[1:], filepath.Join(s.bin, tool)), args...)...)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// newDatabase makes an empty database named after tag and returns its URL.
func (s *pgServer) newDatabase(tag string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	b := make([]byte, 4)
	rand.Read(b)
	name := "dialbox_bench_" + tag + "_" + hex.EncodeToString(b)
	// template0: empty whatever the server's template1 holds.
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	s.dbs = append(s.dbs, name)
	u, err := url.Parse(s.url)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	return u.String(), nil
}

// stop drops the databases made (unless keep) and stops and removes a
// throwaway cluster (its folder kept with keep).
func (s *pgServer) stop(keep bool) {
	if s.dir == "" {
		if !keep {
			s.dropDatabases()
		}
		return
	}
	s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "fast", "stop")
	if keep {
		logf("PostgreSQL cluster kept in %s", s.dir)
		return
	}
	os.RemoveAll(s.dir)
}

func (s *pgServer) dropDatabases() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.url)
	if err != nil {
		logf("PostgreSQL: cannot drop the bench databases %s: %v", strings.Join(s.dbs, ", "), err)
		return
	}
	defer conn.Close(ctx)
	for _, name := range s.dbs {
		// FORCE: a node that did not stop must not keep its database.
		if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`); err != nil {
			logf("PostgreSQL: drop database %s: %v", name, err)
		}
	}
}

// redactURL hides a URL's password, for the report and the log.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
