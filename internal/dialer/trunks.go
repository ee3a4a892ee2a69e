package dialer

import (
	"dialbox/internal/config"
	"dialbox/internal/domain"
	"slices"
	"sync"
	"time"
)

// TrunkLoads is this node's use of the trunks of sip.trunks, the
// scheduler's first gate: a node never exceeds a trunk alone
// (docs/sip.md#capacity).
type TrunkLoads struct {
	first string // name of the trunk "" stands for
	clock func() time.Time

	mu    sync.Mutex
	loads map[string]*trunkLoad
}

// trunkLoad is a trunk's capacity and use: calls up against its channels,
// and the starts of the last second, so that no second ever holds more
// than max_cps starts. A window rather than even spacing lets one
// scheduler tick start a second's worth of calls at once: spaced 1/max_cps
// apart, a tick (some milliseconds of queries and a commit) started one
// call, and the trunk's setup rate was the tick rate, not max_cps.
type trunkLoad struct {
	capacity domain.TrunkCapacity
	up       int
	starts   []time.Time // oldest first, none older than a second
}

// NewTrunkLoads is the trunks of sip.trunks, none in use.
func NewTrunkLoads(trunks []config.SIPTrunk) *TrunkLoads {
	l := &TrunkLoads{clock: time.Now, loads: map[string]*trunkLoad{}}
	for i, t := range trunks {
		if i == 0 {
			l.first = t.Name
		}
		c := domain.TrunkCapacity{Channels: t.MaxChannels, CPS: t.MaxCPS}
		l.loads[t.Name] = &trunkLoad{capacity: c, starts: make([]time.Time, 0, c.CPS)}
	}
	return l
}

// Trunk is the name trunk stands for ("" is the first trunk) and its
// capacity; an unknown name has none (Dial fails its calls and says why).
func (l *TrunkLoads) Trunk(trunk string) (string, domain.TrunkCapacity) {
	name := l.name(trunk)
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.loads[name]; ok {
		return name, t.capacity
	}
	return name, domain.TrunkCapacity{}
}

func (l *TrunkLoads) name(trunk string) string {
	if trunk == "" {
		return l.first
	}
	return trunk
}

// mayStart reports whether a call may start at now without a second
// holding more than max_cps starts, and if not, how long until it may.
func (t *trunkLoad) mayStart(now time.Time) (bool, time.Duration) {
	gone := 0
	for gone < len(t.starts) && !t.starts[gone].Add(time.Second).After(now) {
		gone++
	}
	t.starts = slices.Delete(t.starts, 0, gone)
	if len(t.starts) < t.capacity.CPS {
		return true, 0
	}
	return false, t.starts[0].Add(time.Second).Sub(now)
}

// Reserve grants calls while the trunk has a free channel and the last
// second holds fewer than max_cps starts.
func (l *TrunkLoads) Reserve(trunk string, n int) (int, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.loads[l.name(trunk)]
	if !ok {
		return n, 0 // no such trunk: Dial fails the call and says why
	}
	now := l.clock()
	granted := 0
	for granted < n && t.up < t.capacity.Channels {
		ok, wait := t.mayStart(now)
		if !ok {
			return granted, wait
		}
		t.starts = append(t.starts, now)
		t.up++
		granted++
	}
	return granted, 0
}

// Release frees the channel of a call that ended.
func (l *TrunkLoads) Release(trunk string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.loads[l.name(trunk)]; ok && t.up > 0 {
		t.up--
	}
}

// Unreserve gives back a start Reserve granted that never happened (the
// store refused its claim): its channel, and its place among the second's
// starts, so that the refusal does not hold back this node's next starts.
// The newest start goes, which is the refused one or one of its tick.
func (l *TrunkLoads) Unreserve(trunk string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.loads[l.name(trunk)]
	if !ok {
		return
	}
	if t.up > 0 {
		t.up--
	}
	if n := len(t.starts); n > 0 {
		t.starts = t.starts[:n-1]
	}
}

// trunkGate is the capacity a dialer's calls hold to: the trunks of
// sip.trunks (TrunkLoads) or none (UnlimitedTrunks).
type trunkGate interface {
	Trunk(trunk string) (string, domain.TrunkCapacity)
	Reserve(trunk string, n int) (int, time.Duration)
	Release(trunk string)
	Unreserve(trunk string)
}

// UnlimitedTrunks is the capacity of a dialer without trunks: any number
// of calls may start at any moment.
type UnlimitedTrunks struct{}

func (UnlimitedTrunks) Trunk(name string) (string, domain.TrunkCapacity) {
	return name, domain.TrunkCapacity{}
}
func (UnlimitedTrunks) Reserve(_ string, n int) (int, time.Duration) { return n, 0 }
func (UnlimitedTrunks) Release(string)                               {}
func (UnlimitedTrunks) Unreserve(string)                             {}

// TrunkUse is a trunk's calls up against its channels, for the console.
type TrunkUse struct {
	Name         string
	Up, Channels int
}

// TrunkUses lists every trunk's use, in the order of sip.trunks.
func (l *TrunkLoads) TrunkUses(names []string) []TrunkUse {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []TrunkUse
	for _, n := range names {
		if t, ok := l.loads[n]; ok {
			out = append(out, TrunkUse{Name: n, Up: t.up, Channels: t.capacity.Channels})
		}
	}
	return out
}
