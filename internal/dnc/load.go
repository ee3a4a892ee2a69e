// Package dnc owns reading do-not-call list files: their lines, their
// phone column, the report of what a load did, and loading a file onto a
// list through the store's Store methods. It imports domain alone.
package dnc

import (
	"bufio"
	"bytes"
	"context"
	"dialbox/internal/domain"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Reading a do-not-call list file (docs/compliance.md#list-files): one number
// a line, or CSV whose phone column is named by its header (phone_number,
// as `dialbox import` reads, or phone, so_dien_thoai, number, msisdn) or
// is the first column holding a phone number. Every number is read with
// operation A's rules (normalizePhone, phone.default_region), on every
// core; bad lines and repeats are counted and reported, never fatal.

// Report is what loading a list file did.
type Report struct {
	Lines     int       `json:"lines"`     // data lines read (a header is not one)
	Loaded    int       `json:"loaded"`    // numbers the list gained (a replace: the numbers it now holds)
	Duplicate int       `json:"duplicate"` // repeats within the file, and numbers the list held already
	Bad       int       `json:"bad"`       // lines without a valid phone number
	BadLines  []BadLine `json:"bad_lines"` // the first of them
}

// BadLine is a line of a list file that holds no valid phone number.
type BadLine struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// dncBadLinesShown is how many bad lines a report lists.
const dncBadLinesShown = 10

// dncPhoneHeaders are the header names of a phone column.
var dncPhoneHeaders = map[string]bool{"phone_number": true, "phone": true, "so_dien_thoai": true, "number": true, "msisdn": true}

// FileError is a list file that cannot be read at all.
type FileError struct{ msg string }

func (e *FileError) Error() string { return e.msg }

// dncChunk is a run of lines handed to a parsing worker.
type dncChunk struct {
	lines []int
	raws  []string
}

// dncParsed is a worker's result for one chunk.
type dncParsed struct {
	numbers []int64
	bad     int
	first   []BadLine // its first bad lines
}

// dncCapacityMax bounds the room made at once for a file's numbers (160
// MB): a larger file's numbers grow past it as they are read.
const dncCapacityMax = 20_000_000

// Length is what is known of a list file's length before it is read.
type Length struct {
	Bytes int64 // 0 (or less): unknown
	// claimed: bytes is the client's word (an upload's Content-Length), a
	// bound on what may come rather than what will.
	Claimed bool
}

// ReadFile reads a list file and returns its numbers sorted without
// repeats, with the report so far (Lines, Duplicate within the file, Bad).
// A file's known length makes room for its numbers at once, one per 10
// bytes (a number and its newline take at least that), since growing a
// slice of millions as the file is read holds the old copy and the new one
// at once. Memory is then 8 bytes per number (and under a byte per byte of
// the file) plus a few chunks in flight. A claimed length makes no room
// before the numbers arrive, or a body that claims 2 GB and stalls would
// cost 160 MB unread: the room doubles as they come, never past what the
// claim can hold.
func ReadFile(ctx context.Context, r io.Reader, length Length, region string) ([]int64, Report, error) {
	var rep Report
	chunks := make(chan dncChunk, 4)
	results := make(chan dncParsed, 4)
	var wg sync.WaitGroup
	workers := max(runtime.GOMAXPROCS(0), 1)
	fast := domain.NewFastPhones(region)
	for range workers {
		wg.Go(func() {
			for c := range chunks {
				results <- parseDNCChunk(c, region, fast)
			}
		})
	}
	limit := min(max(length.Bytes/10, 0), dncCapacityMax)
	var numbers []int64
	if !length.Claimed {
		numbers = make([]int64, 0, limit)
	}
	var first []BadLine
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for p := range results {
			if need := len(numbers) + len(p.numbers); length.Claimed && need > cap(numbers) {
				// Doubling, stopped once at the claim's bound; a body
				// without a length (chunked), or past the bound, doubles.
				room := 2 * cap(numbers)
				if cap(numbers) < int(limit) {
					room = min(room, int(limit))
				}
				numbers = slices.Grow(numbers, max(need, room)-len(numbers))
			}
			numbers = append(numbers, p.numbers...)
			rep.Bad += p.bad
			first = append(first, p.first...)
		}
	}()

	unreadable, shown, err := splitDNCFile(ctx, r, region, chunks, &rep)
	close(chunks)
	wg.Wait()
	close(results)
	<-collected
	if err != nil {
		return nil, rep, err
	}
	rep.Bad += unreadable
	first = append(first, shown...)
	slices.SortFunc(first, func(a, b BadLine) int { return a.Line - b.Line })
	rep.BadLines = first[:min(len(first), dncBadLinesShown)]
	slices.Sort(numbers)
	unique := slices.Compact(numbers)
	rep.Duplicate = len(numbers) - len(unique)
	return unique, rep, nil
}

// MaxLine bounds a line of a list file, in bytes: a longer one is one
// bad line, skipped to its end, rather than a buffer that grows with it.
const MaxLine = 64 << 10

// errDNCNoColumn is a line with fewer fields than the phone column's.
var errDNCNoColumn = errors.New("the line has no phone column")

// splitDNCFile reads the file line by line, finds the phone column and
// sends each line's phone to the workers in chunks. Each line is a CSV
// record of its own: a quote left open ends with its line, so a bad line
// is one bad line and never swallows the lines after it. It counts the
// lines that are not CSV or too long (unreadable) and returns the first of
// them; the workers judge the rest.
func splitDNCFile(ctx context.Context, r io.Reader, region string, chunks chan<- dncChunk, rep *Report) (unreadable int, shown []BadLine, err error) {
	const chunkLines = 4096
	br := bufio.NewReaderSize(r, MaxLine)
	col := -1
	bad := func(line int, reason string) {
		unreadable++
		if len(shown) < dncBadLinesShown {
			shown = append(shown, BadLine{line, reason})
		}
	}
	c := dncChunk{}
	for line := 1; ; line++ {
		if line%chunkLines == 0 && ctx.Err() != nil {
			return unreadable, shown, ctx.Err()
		}
		text, tooLong, err := readDNCLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return unreadable, shown, err
		}
		if line == 1 {
			text = bytes.TrimPrefix(text, []byte("\ufeff")) // a spreadsheet's BOM
		}
		if tooLong {
			rep.Lines++
			bad(line, fmt.Sprintf("the line is longer than %d bytes", MaxLine))
			continue
		}
		if len(text) == 0 {
			continue // skipped and not counted, as CSV readers do
		}
		if col < 0 {
			rec, err := dncRecord(text)
			if err != nil {
				rep.Lines++
				bad(line, err.Error())
				continue
			}
			var header bool
			if col, header = dncPhoneColumn(rec, region); header {
				continue
			}
			if col < 0 {
				return unreadable, shown, &FileError{fmt.Sprintf("line %d: no column holds a phone number; name it phone_number in a header row", line)}
			}
		}
		rep.Lines++
		phone, err := dncField(text, col)
		if err != nil {
			bad(line, err.Error())
			continue
		}
		c.lines = append(c.lines, line)
		c.raws = append(c.raws, phone)
		if len(c.lines) == chunkLines {
			chunks <- c
			c = dncChunk{}
		}
	}
	if len(c.lines) > 0 {
		chunks <- c
	}
	return unreadable, shown, nil
}

// readDNCLine returns the next line without its end (\n or \r\n), valid
// until the next read. A line longer than the reader's buffer is read to
// its end and returned as tooLong. At the end of the file it returns io.EOF.
func readDNCLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	line, err = br.ReadSlice('\n')
	for errors.Is(err, bufio.ErrBufferFull) {
		tooLong = true
		_, err = br.ReadSlice('\n')
	}
	if err == io.EOF && (tooLong || len(line) > 0) {
		err = nil // the last line has no end; the next read says EOF
	}
	if err != nil || tooLong {
		return nil, tooLong, err
	}
	line = bytes.TrimSuffix(line, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), false, nil
}

// dncRecord reads a line as one CSV record.
func dncRecord(line []byte) ([]string, error) {
	cr := csv.NewReader(bytes.NewReader(line))
	cr.FieldsPerRecord = -1
	rec, err := cr.Read()
	if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
		return nil, errors.New("not CSV: " + pe.Err.Error())
	}
	return rec, err
}

// dncField is the field col of a line read as CSV. A line without quotes,
// nearly every one, is cut at its commas without a record's allocations.
func dncField(line []byte, col int) (string, error) {
	if bytes.IndexByte(line, '"') >= 0 {
		rec, err := dncRecord(line)
		if err != nil {
			return "", err
		}
		if col >= len(rec) {
			return "", errDNCNoColumn
		}
		return rec[col], nil
	}
	for range col {
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			return "", errDNCNoColumn
		}
		line = line[i+1:]
	}
	if i := bytes.IndexByte(line, ','); i >= 0 {
		line = line[:i]
	}
	return string(line), nil
}

// dncPhoneColumn finds the phone column from the first record: a header
// naming it (header true), else the first field that is a phone number,
// else -1. A file of one column is that column.
func dncPhoneColumn(rec []string, region string) (col int, header bool) {
	for i, f := range rec {
		name := strings.ToLower(strings.TrimSpace(f))
		if dncPhoneHeaders[name] {
			return i, true
		}
	}
	if len(rec) == 1 {
		return 0, false
	}
	for i, f := range rec {
		if _, err := domain.NormalizePhone(f, region); err == nil {
			return i, false
		}
	}
	return -1, false
}

func parseDNCChunk(c dncChunk, region string, fast *domain.FastPhones) dncParsed {
	p := dncParsed{numbers: make([]int64, 0, len(c.raws))}
	for i, raw := range c.raws {
		n, err := fast.Number(raw)
		if err != nil {
			p.bad++
			if len(p.first) < dncBadLinesShown {
				reason := err.Error()
				if strings.TrimSpace(raw) == "" {
					reason = "the line is empty"
				}
				p.first = append(p.first, BadLine{c.lines[i], reason})
			}
			continue
		}
		p.numbers = append(p.numbers, n)
	}
	return p
}

// Load is how Import puts a file's numbers on a list.
type Load struct {
	List    int64 // domain.NationalList or an application's id
	Region  string
	Replace bool // the file becomes the whole list
	// force replaces even when the list would lose more than
	// ReplaceMaxShrink of its numbers.
	Force bool
	Now   time.Time
	// stored, when set, is told how many numbers are stored so far of total.
	Stored func(done, total int)
}

// ReplaceMaxShrink is the share of its numbers a list may lose to a
// replace that is not forced (docs/compliance.md#loading-the-national-register):
// a register does not halve between two editions, a truncated file does.
const ReplaceMaxShrink = 0.5

// ShrinkError refuses a replace that would drop more than
// ReplaceMaxShrink of a list; the CLI and the admin API say how to
// force it.
type ShrinkError struct{ Listed, File int64 }

func (e *ShrinkError) Error() string {
	return fmt.Sprintf("replacing the list would drop more than %.0f%% of its %d numbers (the file holds %d)",
		ReplaceMaxShrink*100, e.Listed, e.File)
}

// Store is what Import asks of the store: a list's count, and
// loading numbers onto it.
type Store interface {
	CountDNC(ctx context.Context, list int64) (int64, time.Time, error)
	LoadDNC(ctx context.Context, list int64, numbers []int64, replace bool, now time.Time, progress func(int)) (int, error)
}

// Import reads a list file and puts its numbers on a list.
func Import(ctx context.Context, s Store, r io.Reader, length Length, load Load) (Report, error) {
	numbers, rep, err := ReadFile(ctx, r, length, load.Region)
	if err != nil {
		return rep, err
	}
	if load.Replace && !load.Force {
		listed, _, err := s.CountDNC(ctx, load.List)
		if err != nil {
			return rep, err
		}
		if float64(listed-int64(len(numbers))) > float64(listed)*ReplaceMaxShrink {
			return rep, &ShrinkError{Listed: listed, File: int64(len(numbers))}
		}
	}
	var progress func(int)
	if load.Stored != nil {
		progress = func(done int) { load.Stored(done, len(numbers)) }
	}
	gained, err := s.LoadDNC(ctx, load.List, numbers, load.Replace, load.Now, progress)
	rep.Loaded = gained
	rep.Duplicate += len(numbers) - gained
	return rep, err
}
