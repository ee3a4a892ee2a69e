package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The raw-insert reference writes operation A's own rows: its 100-contact
// bodies' phones as dialbox normalizes them, in the bodies' order, so the
// phone index is updated at the same scattered places in both.
func TestRawReferenceRowsAreOperationAs(t *testing.T) {
	rows, err := opARows()
	if err != nil {
		t.Fatal(err)
	}
	var bodyPhones []string
	for _, body := range contactBodies(100, 8) {
		var req struct {
			Contacts []struct {
				Phone string `json:"phone_number"`
			} `json:"contacts"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		for _, c := range req.Contacts {
			bodyPhones = append(bodyPhones, c.Phone)
		}
	}
	if len(rows) != len(bodyPhones) {
		t.Fatalf("%d rows for %d contacts in the bodies", len(rows), len(bodyPhones))
	}
	distinct := map[string]bool{}
	for i, r := range rows {
		// The national significant number is the body's, whatever
		// prefix the body wrote it with.
		nsn := strings.TrimPrefix(r.phone, "+84")
		if !strings.HasPrefix(r.phone, "+84") || !strings.HasSuffix(bodyPhones[i], nsn) || len(nsn) != 9 {
			t.Errorf("row %d: phone %q for the body's %q", i, r.phone, bodyPhones[i])
		}
		var fields map[string]string
		if err := json.Unmarshal([]byte(r.fields), &fields); err != nil || fields["so_dien_thoai"] != r.phone || fields["ho_ten"] == "" {
			t.Errorf("row %d: fields %s (%v)", i, r.fields, err)
		}
		distinct[r.phone] = true
	}
	if len(distinct) < len(rows)*9/10 {
		t.Errorf("%d distinct phones in %d rows", len(distinct), len(rows))
	}
	if a, b := sequentialRow(5).phone, sequentialRow(6).phone; a >= b {
		t.Errorf("sequential phones %q then %q do not ascend", a, b)
	}
}

// The bare table takes the raw inserts with no counts to keep, and holds
// every row they report.
func TestRawInsertsIntoABareTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bare.db")
	if err := createBareContacts(path); err != nil {
		t.Fatal(err)
	}
	r, err := rawInserts(path, 1, "sc", 10, time.Minute, 50, sequentialRow)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := countContacts(path); err != nil || n != r.Rows || r.Rows != 50 {
		t.Errorf("%d rows reported, %d stored (%v)", r.Rows, n, err)
	}
}
