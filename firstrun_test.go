package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"dialbox/internal/domain"
	"dialbox/internal/sandbox"
	"dialbox/internal/testtool"
)

// TestFirstRun starts dialbox on an empty database as `go run .` does and
// runs every curl line it printed, as printed: each must answer status 1,
// and the demo calls they make must reach the sink, read with the printed
// sink command, within seconds and with the outcome the block promises.
// So it does again on the next start, which prints the block again.
func TestFirstRun(t *testing.T) {
	t.Run("generated admin token", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "dialbox.db")
		for range 2 {
			out, stop := firstRun(t, nil, "--database", db)
			runPrintedCommands(t, out, nil, true)
			token := regexp.MustCompile(`/admin/v1/sink -H 'Authorization: Bearer ([^']+)'`).FindStringSubmatch(out)
			if token == nil {
				t.Fatalf("no admin token printed:\n%s", out)
			}
			signInPrintedConsole(t, out, token[1])
			stop()
		}
	})
	t.Run("DIALBOX_ADMIN_TOKEN", func(t *testing.T) {
		env := []string{"DIALBOX_ADMIN_TOKEN=first-run-admin-token-0123"}
		out, stop := firstRun(t, env, "--database", filepath.Join(t.TempDir(), "dialbox.db"))
		defer stop()
		runPrintedCommands(t, out, env, true)
		signInPrintedConsole(t, out, "first-run-admin-token-0123")
	})
	t.Run("admin.token in a config file", func(t *testing.T) {
		dir := t.TempDir()
		config := filepath.Join(dir, "dialbox.toml")
		if err := os.WriteFile(config, []byte("[admin]\ntoken = \"config-file-admin-token-0123\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		out, stop := firstRun(t, nil, "--config", config, "--database", filepath.Join(dir, "dialbox.db"))
		defer stop()
		if strings.Contains(out, "config-file-admin-token-0123") {
			t.Errorf("the configured admin token was printed:\n%s", out)
		}
		runPrintedCommands(t, out, nil, false)
		signInPrintedConsole(t, out, "config-file-admin-token-0123")
	})
	t.Run("console off", func(t *testing.T) {
		out, stop := firstRun(t, []string{"DIALBOX_CONSOLE_ENABLED=false"}, "--database", filepath.Join(t.TempDir(), "dialbox.db"))
		defer stop()
		if strings.Contains(out, "/console/") {
			t.Errorf("the console is off but printed:\n%s", out)
		}
	})
}

// signInPrintedConsole opens the console address out printed and signs in
// there with token, as a person who read the block would.
func signInPrintedConsole(t *testing.T, out, token string) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^  (http://\S+/console/)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no console address printed:\n%s", out)
	}
	base := strings.TrimSuffix(m[1], "/console/")
	c := newConsoleClient(t, base)
	if resp, _ := c.get("/console/"); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("GET %s: %d, want the sign-in redirect", m[1], resp.StatusCode)
	}
	if resp := c.signIn(token); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		t.Fatalf("sign-in at %s answered %d to %q", m[1], resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, body := c.get("/console/"); resp.StatusCode != 200 || !strings.Contains(body, "Demo") {
		t.Errorf("the console after sign-in: %d", resp.StatusCode)
	}
}

// firstRun runs `dialbox serve` (run, as main does) on 127.0.0.1:0 with env
// and flags until stop, and returns what it printed once it is serving.
func firstRun(t *testing.T, env []string, flags ...string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out testtool.LockedBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"serve", "--listen", "127.0.0.1:0"}, flags...), &out, env) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dialbox stopped with %v", err)
		}
	}
	t.Cleanup(func() { // after stop, or when the wait below failed
		cancel()
		if t.Failed() {
			t.Logf("dialbox output:\n%s", out.String())
		}
	})
	testtool.WaitFor(t, "the demo block", 30*time.Second, func() bool {
		if strings.Contains(out.String(), "Operation C") { // the demo block is one write
			return true
		}
		select {
		case err := <-done:
			t.Fatalf("dialbox ended: %v", err)
		default:
		}
		return false
	})
	return out.String(), stop
}

// runPrintedCommands runs every curl line of out. With wantSink, one of them
// must read the sink, and it is polled until every contact the others added
// is reported there, ANSWERED and signed.
func runPrintedCommands(t *testing.T, out string, env []string, wantSink bool) {
	t.Helper()
	var contactIDs []string
	var sink *http.Request
	n := 0
	for line := range strings.Lines(out) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "curl ") {
			continue
		}
		n++
		words, err := shellWords(line, env)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		req, err := curlRequest(words)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if req.URL.Path == "/admin/v1/sink" {
			sink = req
		}
		var answer struct {
			Status int             `json:"status"`
			Result json.RawMessage `json:"result"`
		}
		body := doPrinted(t, req)
		if err := json.Unmarshal(body, &answer); err != nil || answer.Status != 1 {
			t.Fatalf("printed command failed:\n%s\nanswer: %s", line, body)
		}
		var added []struct {
			ContactID string `json:"contact_id"`
		}
		if json.Unmarshal(answer.Result, &added) == nil {
			for _, c := range added {
				contactIDs = append(contactIDs, c.ContactID)
			}
		}
	}
	if n < 3 || len(contactIDs) < 2 {
		t.Fatalf("%d curl lines adding %d contacts, want operations A, B and C:\n%s", n, len(contactIDs), out)
	}
	if !wantSink {
		if sink != nil || !strings.Contains(out, "/admin/v1/sink") {
			t.Errorf("want the sink told of without a command:\n%s", out)
		}
		return
	}
	if sink == nil {
		t.Fatalf("no printed command reads the sink:\n%s", out)
	}
	var body []byte // the sink's last answer
	defer func() {
		if t.Failed() {
			t.Logf("the sink's last answer: %s", body)
		}
	}()
	testtool.WaitFor(t, "every demo contact in the sink", 20*time.Second, func() bool {
		var answer struct {
			Result struct {
				Messages []sandbox.SinkMessage `json:"messages"`
			} `json:"result"`
		}
		body = doPrinted(t, sink.Clone(context.Background()))
		if err := json.Unmarshal(body, &answer); err != nil {
			t.Fatalf("sink: %s", body)
		}
		reported := map[string]bool{}
		for _, m := range answer.Result.Messages {
			var ev struct {
				Data struct {
					ContactID string `json:"contact_id"`
					Phone     string `json:"phone"`
					Outcome   string `json:"outcome"`
				} `json:"data"`
			}
			json.Unmarshal(m.Body, &ev)
			if m.EventType != domain.EventContactCompleted {
				continue
			}
			if !m.Verified || ev.Data.Outcome != domain.OutcomeAnswered || ev.Data.Phone != "+84900000009" {
				t.Fatalf("demo result: verified %v (%s), %s", m.Verified, m.Error, m.Body)
			}
			reported[ev.Data.ContactID] = true
		}
		for _, id := range contactIDs {
			if !reported[id] {
				return false
			}
		}
		return true
	})
}

func doPrinted(t *testing.T, req *http.Request) []byte {
	t.Helper()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return body
}

// shellWords splits a command line as sh does for the quoting the first-run
// block uses: '...' literally, "..." and bare words with $NAME and ${NAME}
// taken from env, backslash escapes outside single quotes.
func shellWords(line string, env []string) ([]string, error) {
	var words []string
	var word strings.Builder
	inWord := false
	expand := func(i int) int { // line[i] is '$'; returns the index after the name
		j, brace := i+1, false
		if j < len(line) && line[j] == '{' {
			j, brace = j+1, true
		}
		start := j
		for j < len(line) && (line[j] == '_' || 'A' <= line[j] && line[j] <= 'Z' || 'a' <= line[j] && line[j] <= 'z' || '0' <= line[j] && line[j] <= '9') {
			j++
		}
		word.WriteString(envValue(env, line[start:j]))
		if brace && j < len(line) && line[j] == '}' {
			j++
		}
		return j
	}
	for i := 0; i < len(line); {
		switch c := line[i]; {
		case c == ' ' || c == '\t':
			if inWord {
				words, inWord = append(words, word.String()), false
				word.Reset()
			}
			i++
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unterminated '")
			}
			word.WriteString(line[i+1 : i+1+end])
			i, inWord = i+end+2, true
		case c == '"':
			i, inWord = i+1, true
			for ; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0:
					i++
					word.WriteByte(line[i])
				case line[i] == '$':
					i = expand(i) - 1
				default:
					word.WriteByte(line[i])
				}
			}
			if i >= len(line) {
				return nil, errors.New(`unterminated "`)
			}
			i++
		case c == '\\' && i+1 < len(line):
			word.WriteByte(line[i+1])
			i, inWord = i+2, true
		case c == '$':
			i, inWord = expand(i), true
		default:
			word.WriteByte(c)
			i, inWord = i+1, true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words, nil
}

// curlRequest is the request curl makes for args, for the flags the
// first-run block uses (-s, -X, -H, -d); any other flag is an error, so a
// printed line this cannot run fails the test instead of being skipped.
func curlRequest(args []string) (*http.Request, error) {
	if len(args) == 0 || args[0] != "curl" {
		return nil, fmt.Errorf("not a curl command: %q", args)
	}
	method, target := "", ""
	var body *string
	header := http.Header{}
	for i := 1; i < len(args); i++ {
		switch a := args[i]; a {
		case "-s":
		case "-X", "-H", "-d":
			if i+1 == len(args) {
				return nil, fmt.Errorf("%s without its value", a)
			}
			i++
			v := args[i]
			switch a {
			case "-X":
				method = v
			case "-H":
				name, value, ok := strings.Cut(v, ":")
				if !ok {
					return nil, fmt.Errorf("header %q", v)
				}
				header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
			case "-d":
				body = &v
			}
		default:
			if strings.HasPrefix(a, "-") {
				return nil, fmt.Errorf("curl flag %s is not understood here", a)
			}
			if target != "" {
				return nil, fmt.Errorf("two URLs: %s and %s", target, a)
			}
			target = a
		}
	}
	var rd io.Reader
	if body != nil {
		rd = strings.NewReader(*body)
		if method == "" {
			method = http.MethodPost // as curl -d does
		}
		if header.Get("Content-Type") == "" {
			header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	}
	if method == "" {
		method = http.MethodGet
	}
	req, err := http.NewRequest(method, target, rd)
	if err != nil {
		return nil, err
	}
	req.Header = header
	return req, nil
}

// TestDemoNumber: the number the first-run block calls is the simulator's
// demo number, +84900000009 (TestSimDialerDemoNumber: answered after 1 s,
// talks 2 s).
func TestDemoNumber(t *testing.T) {
	if e164, err := domain.NormalizePhone(demoPhoneLocal, "VN"); err != nil || e164 != "+84900000009" {
		t.Errorf("%s: %s %v", demoPhoneLocal, e164, err)
	}
	if e164, err := domain.NormalizePhone(demoPhoneSpaced, "VN"); err != nil || e164 != "+84900000009" {
		t.Errorf("%s: %s %v", demoPhoneSpaced, e164, err)
	}
}
