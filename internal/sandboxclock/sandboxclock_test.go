package sandboxclock

import (
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	var nilClock *Clock
	if nilClock.Offset() != 0 || time.Since(nilClock.Now()).Abs() > time.Minute {
		t.Errorf("a nil clock is not the real time")
	}
	c := &Clock{}
	if c.Offset() != 0 {
		t.Errorf("a new clock is moved by %s", c.Offset())
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	before := time.Now()
	if !c.Set(at) {
		t.Fatal("Set refused a near date")
	}
	// Now advances from the set instant at real speed.
	if now := c.Now(); now.Before(at) || now.Sub(at) > time.Since(before)+time.Millisecond {
		t.Errorf("now %s after setting %s", now, at)
	}
	if !c.SetOffset(-time.Hour) || c.Offset() != -time.Hour {
		t.Errorf("offset %s, want -1h", c.Offset())
	}
	if c.SetOffset(MaxOffset+time.Second) || c.Set(time.Now().Add(-MaxOffset-time.Hour)) || c.Offset() != -time.Hour {
		t.Errorf("an offset beyond MaxOffset was taken: %s", c.Offset())
	}
	c.SetOffset(0)
	if c.Offset() != 0 {
		t.Errorf("offset 0 did not bring the real time back")
	}
}
