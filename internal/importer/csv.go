package importer

import (
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"dialbox/internal/domain"
)

// CSV is one CSV file's import, shared by `dialbox import` and the
// console's upload (docs/operations.md#bulk-import-from-a-file): its first
// row names the columns, phone_number among them; the rows go a chunk at a
// time through the Importer's checks, so memory follows the chunk, not the
// file, and a file and an API call accept and refuse the same contacts.
type CSV struct {
	Importer   *Importer
	App        *domain.Application
	Scenario   *domain.Scenario
	CampaignID string
	Chunk      int // rows per chunk, each one import
	// Skipped is told of each skipped row, in order: its number (the
	// header is row 1, as spreadsheets number them), why, the header and
	// the row as read.
	Skipped func(row int, reason string, header, rec []string) error
	// Progress, if set, is told after each chunk.
	Progress func()

	Rows, Added, SkippedRows int // so far
}

// ChunkError is a chunk refused whole: the rows from First on were not
// imported (those before were).
type ChunkError struct {
	First int
	Err   error
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("%v: rows from %d on were not imported", e.Err, e.First)
}

func (e *ChunkError) Unwrap() error { return e.Err }

// Run reads r to its end, a chunk at a time.
func (c *CSV) Run(ctx context.Context, r io.Reader) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // short rows are judged per row, not fatal
	header, err := cr.Read()
	if err == io.EOF {
		return errors.New("the file is empty: its first row must name the columns, phone_number among them")
	}
	if err != nil {
		return err
	}
	header[0] = strings.TrimPrefix(header[0], "\ufeff") // spreadsheet programs write a BOM
	phoneCol := -1
	for i, h := range header {
		header[i] = strings.TrimSpace(h)
		if header[i] == "phone_number" {
			phoneCol = i
		}
	}
	if phoneCol < 0 {
		return fmt.Errorf("the header row %q has no phone_number column", strings.Join(header, ","))
	}
	records := make([][]string, 0, c.Chunk)
	for {
		rec, err := cr.Read()
		if err != nil && err != io.EOF {
			var pe *csv.ParseError
			if !errors.As(err, &pe) {
				return err
			}
			return fmt.Errorf("line %d: %w (%d rows before it were imported)", pe.Line, err, c.Rows)
		}
		if rec != nil {
			records = append(records, rec)
		}
		if len(records) == c.Chunk || (err == io.EOF && len(records) > 0) {
			if err := c.importChunk(ctx, header, records); err != nil {
				return err
			}
			records = records[:0]
			if c.Progress != nil {
				c.Progress()
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// importChunk sends rows through the checks of operation A.
func (c *CSV) importChunk(ctx context.Context, header []string, records [][]string) error {
	first := c.Rows + 2
	c.Rows += len(records)
	items := make([]any, 0, len(records))
	kept := make([]int, 0, len(records)) // the record of each item
	var skips []domain.SkippedContact    // by record, with their reasons
	for i, rec := range records {
		contact := make(map[string]any, len(header))
		for j, v := range rec {
			if j < len(header) && header[j] != "" {
				contact[header[j]] = v
			}
		}
		// Over the size limits, a row is skipped here, so the database
		// stores nothing of it; operations A and C refuse such a request.
		if key, reason, over := c.Importer.Oversized(contact); over {
			if key != "" {
				reason = key + " " + reason
			}
			skips = append(skips, domain.SkippedContact{Position: i, Reason: reason})
			continue
		}
		items = append(items, contact)
		kept = append(kept, i)
	}
	if len(items) > 0 {
		res, err := c.Importer.Import(ctx, c.App, c.Scenario, c.CampaignID, items, time.Now())
		switch code := domain.ErrorCode(err); code {
		case "", domain.EALLINVALID:
		case domain.EIMPORTFAILED:
			return &ChunkError{First: first, Err: errors.Unwrap(err)}
		default:
			return &ChunkError{First: first, Err: err}
		}
		c.Added += len(res.Added)
		for _, sk := range res.Skipped {
			skips = append(skips, domain.SkippedContact{Position: kept[sk.Position], Reason: sk.Reason})
		}
	}
	c.SkippedRows += len(skips)
	slices.SortFunc(skips, func(a, b domain.SkippedContact) int { return cmp.Compare(a.Position, b.Position) })
	for _, sk := range skips {
		if err := c.Skipped(first+sk.Position, sk.Reason, header, records[sk.Position]); err != nil {
			return err
		}
	}
	return nil
}
