package domain

import (
	"fmt"
	"strings"
	"time"
)

// callWindow is a parsed CallConfig.CallWindow: calls may start only at a
// local time of day in [start, end) on one of the days. A window whose end
// is before its start runs over midnight.
type ParsedCallWindow struct {
	start, end int // minutes after local midnight; end may be 1440
	loc        *time.Location
	days       [7]bool // by time.Weekday
}

var weekdays = map[string]time.Weekday{"SUN": time.Sunday, "MON": time.Monday, "TUE": time.Tuesday,
	"WED": time.Wednesday, "THU": time.Thursday, "FRI": time.Friday, "SAT": time.Saturday}

func ParseCallWindow(cw CallWindow) (*ParsedCallWindow, error) {
	w := &ParsedCallWindow{}
	var err error
	if w.start, err = parseClock(cw.Start); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	if w.end, err = parseClock(cw.End); err != nil {
		return nil, fmt.Errorf("end: %w", err)
	}
	if w.start == w.end {
		return nil, fmt.Errorf("start and end are equal; use 00:00 to 24:00 for all day")
	}
	if w.loc, err = time.LoadLocation(cw.Timezone); err != nil || cw.Timezone == "" {
		return nil, fmt.Errorf("timezone %q is not an IANA time zone like Asia/Ho_Chi_Minh", cw.Timezone)
	}
	if len(cw.Days) == 0 {
		w.days = [7]bool{true, true, true, true, true, true, true}
	}
	for _, d := range cw.Days {
		wd, ok := weekdays[strings.ToUpper(d)]
		if !ok {
			return nil, fmt.Errorf("day %q is not one of MON TUE WED THU FRI SAT SUN", d)
		}
		w.days[wd] = true
	}
	return w, nil
}

func parseClock(s string) (int, error) {
	var h, m int
	if n, err := fmt.Sscanf(s, "%d:%d", &h, &m); err != nil || n != 2 || len(s) != 5 ||
		h < 0 || m < 0 || m > 59 || h > 24 || (h == 24 && m != 0) {
		return 0, fmt.Errorf("%q is not a time like \"08:00\"", s)
	}
	return h*60 + m, nil
}

// Contains reports whether a call may start at t.
func (w *ParsedCallWindow) Contains(t time.Time) bool {
	local := t.In(w.loc)
	m := local.Hour()*60 + local.Minute()
	wd := local.Weekday()
	if w.start < w.end {
		return w.days[wd] && m >= w.start && m < w.end
	}
	yesterday := (wd + 6) % 7
	return (w.days[wd] && m >= w.start) || (w.days[yesterday] && m < w.end)
}

// Next returns t if a call may start at t, else the next moment one may.
func (w *ParsedCallWindow) Next(t time.Time) time.Time {
	if w.Contains(t) {
		return t
	}
	local := t.In(w.loc)
	for d := 0; d <= 7; d++ {
		day := time.Date(local.Year(), local.Month(), local.Day()+d, 0, 0, 0, 0, w.loc)
		open := day.Add(time.Duration(w.start) * time.Minute)
		if open.After(t) && w.days[open.Weekday()] {
			return open
		}
	}
	return t // no day enabled: parseCallWindow refuses that, so unreachable
}

// normalizeDays writes a call window's days as the contract spells them
// (MON..SUN): they are read in any case, and stored and echoed upper-case.
func (cw *CallWindow) normalizeDays() {
	for i, d := range cw.Days {
		cw.Days[i] = strings.ToUpper(d)
	}
}
