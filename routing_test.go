package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// rawRequest sends method and target exactly as written (no client
// cleaning the path or following a redirect) and returns the answer.
func rawRequest(t *testing.T, s *testServer, method, target, auth string) (int, string, string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := method + " " + target + " HTTP/1.1\r\nHost: dialbox\r\nConnection: close\r\nContent-Length: 0\r\n"
	if auth != "" {
		req += "Authorization: " + auth + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// TestNoRedirects: a path httprouter would redirect (trailing slash, dot
// segments, wrong case) gets the API's JSON 404, under /api and /admin
// alike, never an HTML 301 or 308.
func TestNoRedirects(t *testing.T) { eachBackend(t, testNoRedirects) }

func testNoRedirects(t *testing.T, backend string) {
	s := startSandboxOn(t, backend)
	qa := bearer(t, "qa-key", "qa-secret")
	_, _, notFound := rawRequest(t, s, "GET", "/nowhere", "")
	if notFound != `{"status":0,"code":404,"message":"Not found"}` {
		t.Fatalf("NotFound body: %s", notFound)
	}
	for _, c := range []struct{ method, target, auth string }{
		{"GET", "/api/v1/public-api/scenarios/", qa},
		{"GET", "/api/v1/public-api/../public-api/scenarios", qa},
		{"GET", "/api/v1/public-api/./scenarios", qa},
		{"GET", "//api/v1/public-api/scenarios", qa},
		{"GET", "/API/v1/public-api/scenarios", qa},
		{"GET", "/api/v1/public-api/Scenarios?limit=1", qa},
		{"POST", "/api/v1/public-api/campaign/", qa},
		{"POST", "/api/v1/public-api/scenarios/sc-remind/calls/", qa},
		{"GET", "/admin/v1/apps/", adminAuth},
		{"GET", "/admin/v1/../v1/apps", adminAuth},
		{"GET", "/Admin/v1/apps", adminAuth},
		{"POST", "/admin/v1/apps/qa-key/disable/", adminAuth},
	} {
		status, ctype, body := rawRequest(t, s, c.method, c.target, c.auth)
		if status != 404 || ctype != "application/json; charset=utf-8" || body != notFound {
			t.Errorf("%s %s: HTTP %d %s %q", c.method, c.target, status, ctype, body)
		}
	}
	if status, _, body := rawRequest(t, s, "GET", "/api/v1/public-api/scenarios", qa); status != 200 {
		t.Errorf("the exact path: HTTP %d %s", status, body)
	}
}
