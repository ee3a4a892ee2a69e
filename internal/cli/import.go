package cli

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"dialbox/internal/csvsafe"
	"dialbox/internal/domain"
	"dialbox/internal/httpx"
	"dialbox/internal/importer"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// runImport loads contacts from a CSV file straight into the database, in
// chunks, through the Importer operation A uses (1208, 1104, 2301, contact
// validation, duplicates, 1105), so a file and an API call accept and
// refuse the same contacts. It works with the server
// running (SQLite serialises the two writers; the engine finds the new
// contacts on its next poll) or stopped.
func runImport(ctx context.Context, args []string, stdout io.Writer, env []string, p Parts) error {
	fs, f := NewFlagSet("import")
	appKey := fs.String("app", "", "API key of the application (may be left out when the database has only one)")
	scenarioID := fs.String("scenario", "", "scenario to add the contacts to")
	campaignID := fs.String("campaign", "", "campaign to add the contacts to (its scenario is used)")
	chunk := fs.Int("chunk", 1000, "contacts per transaction")
	pos, err := positional(fs, args, 1, fmt.Errorf("import: give one contacts.csv file\n%s", Usage))
	if err != nil {
		return err
	}
	if *scenarioID == "" && *campaignID == "" {
		return errors.New("import: --scenario ID or --campaign ID is required")
	}
	if *chunk < 1 || *chunk > 10000 {
		return errors.New("import: --chunk must be from 1 to 10000")
	}
	cfg, err := f.Load(fs, env)
	if err != nil {
		return err
	}
	path := pos[0]
	in, size, err := openInput("import", path)
	if err != nil {
		return err
	}
	defer in.Close()

	store, err := p.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()
	app, err := importApp(ctx, store, *appKey)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	imp := &csvImport{
		importer:    importer.New(store, cfg, slog.New(slog.DiscardHandler), nil),
		store:       store,
		app:         app,
		chunk:       *chunk,
		skippedPath: strings.TrimSuffix(path, filepath.Ext(path)) + ".skipped.csv",
	}
	if err := imp.target(ctx, *scenarioID, *campaignID); err != nil {
		return fmt.Errorf("import: %w", err)
	}

	src, bar := progressOf(in, size, "importing")
	if bar != nil {
		imp.onChunk = func() { bar.Describe(fmt.Sprintf("added %d, skipped %d", imp.added, imp.skipped)) }
		defer bar.Finish()
	}
	err = imp.run(ctx, src)
	fmt.Fprintf(stdout, "%s: %d rows read, %d contacts added, %d skipped\n", path, imp.rows, imp.added, imp.skipped)
	if imp.skipped > 0 {
		fmt.Fprintf(stdout, "reasons for the skipped rows: %s\n", imp.skippedPath)
	}
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// openInput opens the file command reads, with its size for the progress
// bar; the caller closes it.
func openInput(command, path string) (*os.File, int64, error) {
	in, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", command, err)
	}
	stat, err := in.Stat()
	if err != nil {
		in.Close()
		return nil, 0, err
	}
	return in, stat.Size(), nil
}

// progressOf is in, read through a progress bar on stderr, described by
// what, when stderr is a terminal (the caller finishes the bar); else in
// itself and no bar.
func progressOf(in io.Reader, size int64, what string) (io.Reader, *progressbar.ProgressBar) {
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return in, nil
	}
	bar := progressbar.NewOptions64(size, progressbar.OptionSetWriter(os.Stderr),
		progressbar.OptionSetDescription(what), progressbar.OptionShowBytes(true),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	reader := progressbar.NewReader(in, bar)
	return &reader, bar
}

// importApp finds the application to import for; with no key given, the
// only application of the database.
func importApp(ctx context.Context, store Store, key string) (*domain.Application, error) {
	if key != "" {
		app, err := store.AppByKey(ctx, key)
		if errors.Is(err, domain.ErrNotFound) {
			return nil, fmt.Errorf("no application has API key %q", key)
		}
		return app, err
	}
	apps, err := store.ListApps(ctx)
	if err != nil {
		return nil, err
	}
	if len(apps) != 1 {
		return nil, fmt.Errorf("the database has %d applications: name one with --app API_KEY", len(apps))
	}
	return apps[0], nil
}

// csvImport is one file's import: chunks of rows go through the checks of
// operation A; skipped rows are written, with their reason, to skippedPath.
type csvImport struct {
	importer    *importer.Importer
	store       importTarget
	app         *domain.Application
	sc          *domain.Scenario
	campaignID  string
	chunk       int
	skippedPath string
	onChunk     func() // after each chunk, for progress

	rows, added, skipped int
	out                  *os.File // skipped rows, made at the first one
	skippedCSV           *csv.Writer
}

// importTarget is what an import reads of the store to find where the
// contacts go.
type importTarget interface {
	Scenario(ctx context.Context, appID int64, id string) (*domain.Scenario, error)
	Campaign(ctx context.Context, appID int64, id string) (*domain.Campaign, error)
}

// target looks up the scenario (and campaign) as operations A and C do.
func (imp *csvImport) target(ctx context.Context, scenarioID, campaignID string) error {
	store, appID := imp.store, imp.app.ID
	if campaignID != "" {
		camp, err := store.Campaign(ctx, appID, campaignID)
		if errors.Is(err, domain.ErrNotFound) {
			return fmt.Errorf("%v: %q", httpx.PublicNotFound["Campaign"], campaignID)
		}
		if err != nil {
			return err
		}
		if scenarioID != "" && scenarioID != camp.ScenarioID {
			return fmt.Errorf("campaign %q belongs to scenario %q, not %q", campaignID, camp.ScenarioID, scenarioID)
		}
		scenarioID, imp.campaignID = camp.ScenarioID, camp.ID
	}
	sc, err := store.Scenario(ctx, appID, scenarioID)
	if errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("%v: %q", httpx.PublicNotFound["Scenario"], scenarioID)
	}
	imp.sc = sc
	return err
}

// run reads the CSV a chunk at a time through importer.CSV, so memory
// stays the same whatever the size of the file.
func (imp *csvImport) run(ctx context.Context, r io.Reader) error {
	c := &importer.CSV{Importer: imp.importer, App: imp.app, Scenario: imp.sc, CampaignID: imp.campaignID, Chunk: imp.chunk,
		Skipped: imp.writeSkipped}
	c.Progress = func() {
		imp.rows, imp.added, imp.skipped = c.Rows, c.Added, c.SkippedRows
		if imp.onChunk != nil {
			imp.onChunk()
		}
	}
	err := imp.refused(c.Run(ctx, r))
	imp.rows, imp.added, imp.skipped = c.Rows, c.Added, c.SkippedRows
	return errors.Join(err, imp.closeSkipped())
}

// refused says why a chunk was not imported: with operation A's code for a
// refusal, so the file and the API explain themselves alike.
func (imp *csvImport) refused(err error) error {
	var ce *importer.ChunkError
	if !errors.As(err, &ce) {
		return err
	}
	if body, known := httpx.PublicError(httpx.OpAddToScenario, ce.Err); known {
		return fmt.Errorf("%d %s: rows from %d on were not imported", body.Code, body.Message, ce.First)
	}
	return fmt.Errorf("%s (rows from %d on were not imported)", ce.Err, ce.First)
}

// writeSkipped adds a row to the skipped-rows file: its row number, the
// reason, then the row as read, so it can be fixed and imported again.
func (imp *csvImport) writeSkipped(row int, reason string, header, rec []string) error {
	if imp.skippedCSV == nil {
		// Owner-only: the rows hold phone numbers and personal fields. A
		// file left by an earlier run keeps its mode through O_TRUNC, so
		// it is set again.
		f, err := os.OpenFile(imp.skippedPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		if err := f.Chmod(0o600); err != nil {
			f.Close()
			return err
		}
		imp.out, imp.skippedCSV = f, csv.NewWriter(f)
		imp.skippedCSV.Write(csvsafe.Row(append([]string{"row", "reason"}, header...)))
	}
	// The file is opened in a spreadsheet to be fixed: no cell of it may
	// run there as a formula.
	return imp.skippedCSV.Write(csvsafe.Row(append([]string{strconv.Itoa(row), reason}, rec...)))
}

func (imp *csvImport) closeSkipped() error {
	if imp.skippedCSV == nil {
		return nil
	}
	imp.skippedCSV.Flush()
	return errors.Join(imp.skippedCSV.Error(), imp.out.Close())
}
