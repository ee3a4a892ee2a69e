package main

// docs/sandbox.md run as written: its sandbox.toml and fixtures.toml, and
// the admin commands of its examples, so what the page promises is what a
// QA engineer copying it gets.

import (
	"dialbox/internal/domain"
	"dialbox/internal/testtool"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// docBlock is the first fenced block of page after the line holding
// marker, without its fences.
func docBlock(t *testing.T, page, marker string) string {
	t.Helper()
	_, after, ok := strings.Cut(page, marker)
	if !ok {
		t.Fatalf("the page has no %q", marker)
	}
	_, block, ok := strings.Cut(after, "```")
	if !ok {
		t.Fatalf("no block after %q", marker)
	}
	block = block[strings.Index(block, "\n")+1:] // the fence's language
	block, _, _ = strings.Cut(block, "```")
	return block
}

// docCurl matches the admin commands of docs/sandbox.md:
// curl -s [-X METHOD] "$B/admin/v1/..." -H "$A" [-d '...'].
var docCurl = regexp.MustCompile(`^curl -s (?:-X (\w+) )?"?\$B(/admin/v1/[^ "]*)"? -H "\$A"(?: -d '([^']*)')?`)

// runDocCommand runs the command on the line after the comment marker of
// page against s, as the shell would with $B and $A set as the page sets
// them, and returns the result of its success envelope.
func runDocCommand(t *testing.T, s *testServer, page, marker string) json.RawMessage {
	t.Helper()
	_, after, ok := strings.Cut(page, marker+"\n")
	if !ok {
		t.Fatalf("the page has no %q", marker)
	}
	line, _, _ := strings.Cut(after, "\n")
	m := docCurl.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("%q is not an admin command this test can run", line)
	}
	method := m[1]
	if method == "" {
		method = "GET"
	}
	status, b := s.do(t, method, m[2], adminAuth, m[3])
	var env struct {
		Status int
		Result json.RawMessage
	}
	if status != 200 || json.Unmarshal(b, &env) != nil || env.Status != 1 {
		t.Fatalf("%s: HTTP %d %s", line, status, b)
	}
	return env.Result
}

// startDocSandbox starts dialbox as docs/sandbox.md#1-start-with-your-fixtures
// says, with its sandbox.toml and fixtures.toml, on a new database of
// backend and a free port.
func startDocSandbox(t *testing.T, backend string) (*testServer, string) {
	t.Helper()
	raw, err := os.ReadFile("docs/sandbox.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	dir := t.TempDir()
	fixtures := writeTestFileIn(t, dir, "fixtures.toml", docBlock(t, page, "`fixtures.toml`"))
	config := writeTestFileIn(t, dir, "sandbox.toml", docBlock(t, page, "`sandbox.toml`"))
	m := startMain(t, &strings.Builder{}, []string{"--config", config, "--fixtures", fixtures,
		"--database", backendDatabase(t, backend)}, nil, nil)
	t.Cleanup(func() { m.Close() })
	if testAdminToken != m.Config.Admin.Token {
		t.Fatalf("the page's admin token %q is not the tests' %q", m.Config.Admin.Token, testAdminToken)
	}
	return &testServer{m: m, url: m.URL()}, page
}

func writeTestFileIn(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sinkCall waits for the call.completed of phone in the sink named name.
func sinkCall(t *testing.T, s *testServer, name, phone string) botCall {
	t.Helper()
	var call botCall
	testtool.WaitFor(t, fmt.Sprintf("the call.completed of %s in the sink %q", phone, name), time.Minute, func() bool {
		var sink struct {
			Messages []struct{ Body struct{ Data botCall } }
		}
		s.admin(t, "GET", "/sink?name="+name+"&event_type=call.completed", "", &sink)
		for _, m := range sink.Messages {
			if m.Body.Data.Phone == phone {
				call = m.Body.Data
				return true
			}
		}
		return false
	})
	return call
}

// TestSandboxDocPressOne: docs/sandbox.md#scripted-calls-without-a-phone,
// forcing key 1 on the page's own sc-remind, gives result "confirmed".
func TestSandboxDocPressOne(t *testing.T) { eachBackend(t, testSandboxDocPressOne) }

func testSandboxDocPressOne(t *testing.T, backend string) {
	s, page := startDocSandbox(t, backend)
	runDocCommand(t, s, page, `# the next call to 0912345678 presses 1: the reminder's result is "confirmed"`)
	s.public(t, "qa-key", "qa-secret", "POST", "/api/v1/public-api/scenarios/sc-remind/calls",
		`{"contacts":[{"phone_number":"0912345678"}]}`)
	call := sinkCall(t, s, "qa", "+84912345678")
	if call.Outcome != domain.OutcomeAnswered || call.Digits != "1" || call.Result != "confirmed" {
		t.Errorf("the page promises result confirmed; the call: %+v", call)
	}
	// The page's way to 1208 for real, now that sc-remind has a script.
	s.admin(t, "PATCH", "/apps/qa-key/scenarios/sc-remind", `{"content":"","script":null}`, nil)
	if _, e := s.public(t, "qa-key", "qa-secret", "POST", "/api/v1/public-api/scenarios/sc-remind/calls",
		`{"contacts":[{"phone_number":"0912345679"}]}`); e.Code != 1208 {
		t.Errorf("content and script removed: %+v, want 1208", e)
	}
}
