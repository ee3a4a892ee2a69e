package httpx

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// RateLimits holds one token bucket per application, so one noisy tenant
// cannot starve the others.
type RateLimits struct {
	perSecond float64
	burst     int
	mu        sync.Mutex
	buckets   map[int64]*rate.Limiter
}

func NewRateLimits(perSecond float64, burst int) *RateLimits {
	return &RateLimits{perSecond: perSecond, burst: burst, buckets: map[int64]*rate.Limiter{}}
}

// Allow takes a token for the application; when there is none it returns
// false and how long until there will be (for Retry-After).
func (l *RateLimits) Allow(appID int64, now time.Time) (bool, time.Duration) {
	if l == nil || l.perSecond <= 0 {
		return true, 0
	}
	l.mu.Lock()
	b, ok := l.buckets[appID]
	if !ok {
		b = rate.NewLimiter(rate.Limit(l.perSecond), l.burst)
		l.buckets[appID] = b
	}
	l.mu.Unlock()
	r := b.ReserveN(now, 1)
	if delay := r.DelayFrom(now); delay > 0 {
		r.CancelAt(now)
		return false, delay
	}
	return true, 0
}

// RetryAfterSeconds rounds a wait up to whole seconds, at least 1.
func RetryAfterSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
