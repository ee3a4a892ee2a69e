package dialer

import (
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"testing"
	"time"
)

// A node's own gate on a trunk: channels and a one-second window of
// starts, "" standing for the first trunk, and a start the store refused
// given back whole, its channel and its place in the window.
func TestTrunkLoadsReserveAndUnreserve(t *testing.T) {
	l := NewTrunkLoads([]config.SIPTrunk{{Name: "main", MaxChannels: 4, MaxCPS: 3}, {Name: "backup", MaxChannels: 1, MaxCPS: 1}})
	now := time.Unix(1_800_000_000, 0)
	l.clock = func() time.Time { return now }
	if name, c := l.Trunk(""); name != "main" || c != (domain.TrunkCapacity{Channels: 4, CPS: 3}) {
		t.Fatalf(`trunk "" is %q %+v, want main with its capacity`, name, c)
	}
	if name, c := l.Trunk("nope"); name != "nope" || c.Limited() {
		t.Fatalf("an unknown trunk is %q %+v, want its name and no capacity", name, c)
	}
	if n, wait := l.Reserve("", 5); n != 3 || wait != time.Second {
		t.Fatalf("reserved %d (wait %v), want max_cps 3, then a second's wait", n, wait)
	}
	// Two of the three claims refused: the node may start two more at once.
	l.Unreserve("main")
	l.Unreserve("main")
	if n, _ := l.Reserve("main", 5); n != 2 {
		t.Fatalf("after two refused starts reserved %d, want 2", n)
	}
	if u := l.TrunkUses([]string{"main"}); u[0].Up != 3 {
		t.Fatalf("%d channels up, want 3 (the refused ones given back)", u[0].Up)
	}
	// A second on, the window is empty; the channels are not.
	now = now.Add(time.Second)
	if n, wait := l.Reserve("main", 5); n != 1 || wait != 0 {
		t.Fatalf("reserved %d (wait %v), want the 1 free channel, then a call's end", n, wait)
	}
	l.Release("main")
	if n, _ := l.Reserve("main", 5); n != 1 {
		t.Fatalf("after a call ended reserved %d, want 1", n)
	}
}
