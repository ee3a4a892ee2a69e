// Package sandboxclock owns the sandbox's "now": the real time moved by an
// offset the admin API sets, so QA can test rules that read the time (call
// windows, advertising hours, the per-number daily limit, re_call delays,
// wallet expiry) at any hour. The moved time advances at real speed; the
// simulator's time scale is a separate setting. Each server keeps its own
// offset in memory (docs/sandbox.md#the-clock).
package sandboxclock

import (
	"sync/atomic"
	"time"
)

// MaxOffset bounds how far the clock moves from the real time, so a typo
// cannot move it past what time.Duration holds or years dialbox is not
// tested in.
const MaxOffset = 10 * 365 * 24 * time.Hour

// Clock is the moved time. The zero value reads the real time; a nil
// *Clock too, and cannot be moved (a server making real calls).
type Clock struct {
	offset atomic.Int64 // nanoseconds added to the real time
}

// Now is the real time plus the offset.
func (c *Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// Offset is how far the clock is moved from the real time.
func (c *Clock) Offset() time.Duration {
	if c == nil {
		return 0
	}
	return time.Duration(c.offset.Load())
}

// SetOffset moves the clock to the real time plus d; 0 brings the real
// time back. It reports false, moving nothing, when d is beyond MaxOffset.
func (c *Clock) SetOffset(d time.Duration) bool {
	if d > MaxOffset || d < -MaxOffset {
		return false
	}
	c.offset.Store(int64(d))
	return true
}

// Set makes now the clock's current time, from which it advances; false,
// moving nothing, when now is beyond MaxOffset of the real time.
func (c *Clock) Set(now time.Time) bool {
	return c.SetOffset(time.Until(now))
}
