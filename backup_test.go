package main

import (
	"bytes"
	"context"
	"dialbox/internal/recordings"
	"dialbox/internal/store"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestBackupUnderLoad takes a backup while clients keep importing, restores
// it, and finds in it every contact acknowledged before the backup began.
func TestBackupUnderLoad(t *testing.T) {
	m, token := startOpsServer(t, io.Discard)
	url := m.URL() + "/api/v1/public-api/scenarios/" + store.DemoScenarioID + "/calls"

	var mu sync.Mutex
	var acked []string
	enough := make(chan struct{}) // closed, then nil, once 400 are acknowledged
	ready := enough
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var clientErr error
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var contacts []string
				for j := 0; j < 20; j++ {
					contacts = append(contacts, fmt.Sprintf(`{"phone_number":"0912%01d%05d"}`, w, (i*20+j)%100000))
				}
				resp, body, err := opsRequest("POST", url, token, `{"contacts":[`+strings.Join(contacts, ",")+`]}`)
				var ok struct {
					Result []struct {
						ContactID string `json:"contact_id"`
					} `json:"result"`
				}
				if err == nil {
					err = json.Unmarshal(body, &ok)
				}
				if err != nil || resp.StatusCode != 200 || len(ok.Result) != 20 {
					mu.Lock()
					clientErr = fmt.Errorf("import: %v %s", err, body)
					if enough != nil { // let the test stop rather than wait
						close(enough)
						enough = nil
					}
					mu.Unlock()
					return
				}
				mu.Lock()
				for _, c := range ok.Result {
					acked = append(acked, c.ContactID)
				}
				if len(acked) >= 400 && enough != nil {
					close(enough)
					enough = nil
				}
				mu.Unlock()
			}
		}()
	}
	<-ready

	mu.Lock()
	if clientErr != nil {
		mu.Unlock()
		close(stop)
		wg.Wait()
		t.Fatal(clientErr)
	}
	before := append([]string(nil), acked...) // acknowledged before the backup began
	mu.Unlock()
	dir := t.TempDir()
	backup := filepath.Join(dir, "backup.db")
	var out bytes.Buffer
	err := run(context.Background(), []string{"backup", "--database", m.Config.Database, backup}, &out, nil)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	if clientErr != nil {
		t.Fatal(clientErr)
	}
	t.Log(strings.TrimSpace(out.String()))

	restored := filepath.Join(dir, "restored.db")
	out.Reset()
	if err := run(context.Background(), []string{"restore", backup, "--database", restored}, &out, nil); err != nil {
		t.Fatalf("restore: %v", err)
	}
	store, err := store.OpenSQLite(restored, sqliteMigrations(), store.NewMetrics(false), recordings.Files{})
	if err != nil {
		t.Fatal(err)
	}
	opened(t, store, restored)
	defer store.Close()
	app, err := store.DemoApp(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := contactIDs(t, store, app.ID)
	missing := 0
	for _, id := range before {
		if !ids[id] {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d contacts acknowledged before the backup are not in it", missing, len(before))
	}
}

func TestRestoreRefusesDatabaseInUse(t *testing.T) {
	m, _ := startOpsServer(t, io.Discard)
	dir := t.TempDir()
	backup := filepath.Join(dir, "backup.db")
	if err := run(context.Background(), []string{"backup", backup, "--database", m.Config.Database}, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"backup", backup, "--database", m.Config.Database}, io.Discard, nil); err == nil {
		t.Error("backup overwrote an existing file")
	}
	err := run(context.Background(), []string{"restore", backup, "--database", m.Config.Database}, io.Discard, nil)
	if err == nil || !strings.Contains(err.Error(), "in use by a running dialbox") {
		t.Fatalf("restore over a running server's database: %v", err)
	}

	// Stopped, the database is replaced and the old one kept aside.
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"restore", backup, "--database", m.Config.Database}, &out, nil); err != nil {
		t.Fatalf("restore: %v", err)
	}
	kept, _ := filepath.Glob(m.Config.Database + ".before-restore-*")
	if len(kept) != 1 || !strings.Contains(out.String(), kept[0]) {
		t.Errorf("replaced database not kept: %v\n%s", kept, out.String())
	}
	if _, err := os.Stat(m.Config.Database + "-wal"); err == nil {
		t.Error("the replaced database's WAL was left beside the restored one")
	}

	bad := filepath.Join(dir, "bad.db")
	os.WriteFile(bad, []byte("not a database"), 0o600)
	if err := run(context.Background(), []string{"restore", bad, "--database", filepath.Join(dir, "x.db")}, io.Discard, nil); err == nil {
		t.Error("restored a file that is not a database")
	}
}

// A backup holds every secret and phone number of the database: only its
// owner may read it, whatever the umask (docs/operations.md#backup-and-restore).
func TestBackupIsPrivate(t *testing.T) {
	s, db := openTestStore(t)
	s.Close()
	backup := filepath.Join(t.TempDir(), "backup.db")
	if err := run(context.Background(), []string{"backup", backup, "--database", db}, io.Discard, nil); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(backup)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("backup written with mode %o, want 600", perm)
	}
}
