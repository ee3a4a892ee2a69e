package main

// The request journal's byte bound: long headers, paths and queries are
// cut as bodies are, and the entries of a flood stay within
// journal.max_bytes.

import (
	"dialbox/internal/config"
	"strconv"
	"strings"
	"testing"
)

func TestJournalBoundedInBytes(t *testing.T) {
	const maxBytes = 100_000 // a few entries of cut fields
	s := startSandboxOn(t, "sqlite", "DIALBOX_JOURNAL_MAX_BYTES="+strconv.Itoa(maxBytes))
	// Failed authentications with a 300 KB bearer, a 100 KB scenario id
	// and a 300 KB query: each request's line and headers near 700 KB.
	bearer := "Bearer " + strings.Repeat("b", 300_000)
	path := "/api/v1/public-api/scenarios/" + strings.Repeat("s", 100_000) + "/calls"
	query := "q=" + strings.Repeat("x", 300_000)
	for i := range 30 {
		if status, body := s.do(t, "POST", path+"?"+query+strconv.Itoa(i), bearer, `{"contacts":[]}`); status != 401 {
			t.Fatalf("request %d: %d %s", i, status, body)
		}
	}
	journal := s.m.api.journal
	entries, retained := journal.Size()
	if entries == 0 || entries == 30 || retained > maxBytes || retained < maxBytes-config.MaxJournalEntryBytes(4096) {
		t.Errorf("the journal keeps %d entries in %d bytes; want the newest within %d", entries, retained, maxBytes)
	}
	if v, ok := metricValue(scrapeMetrics(t, s.url+"/metrics"), "dialbox_memory_retained_bytes", "part", "journal"); !ok || int(v) != retained {
		t.Errorf("dialbox_memory_retained_bytes{part=\"journal\"} = %v, %v; want %d", v, ok, retained)
	}
	newest, ok := journal.Entry(journal.Latest())
	if !ok {
		t.Fatal("the newest request is not journaled")
	}
	if len(newest.Authorization) != config.MaxJournalFieldBytes || !strings.HasPrefix(bearer, newest.Authorization) ||
		len(newest.Path) != config.MaxJournalFieldBytes || !newest.PathTruncated ||
		len(newest.Query) != config.MaxJournalFieldBytes || !newest.QueryTruncated {
		t.Errorf("newest entry keeps a %d-byte Authorization, a %d-byte path (cut: %v), a %d-byte query (cut: %v); want each cut at %d",
			len(newest.Authorization), len(newest.Path), newest.PathTruncated, len(newest.Query), newest.QueryTruncated, config.MaxJournalFieldBytes)
	}
	// The console's "copy as curl" says its command cannot send the request
	// as it came.
	if _, page := signedIn(t, s).get("/console/journal/" + itoa(newest.ID)); !strings.Contains(page, "longer than the journal keeps") {
		t.Errorf("the request's console page does not say its path, query or headers were cut:\n%s", page)
	}
}
