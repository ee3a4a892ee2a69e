// Package tokenlimit limits guesses of the admin token, on the admin API
// and the console's sign-in alike (docs/admin.md#wrong-tokens): wrong
// tokens are counted per client address and overall, each in a bucket
// refilled over a minute. Once a bucket is empty, any token, right or
// wrong, is refused unchecked within a short back-off of that bucket's
// last refused or wrong token; past it, the right token is taken. So a
// guesser gets at most one checked guess per back-off, while someone
// holding the right token, who stopped typing wrong ones, waits one
// back-off at most. Each lockout is logged once, when it begins.
package tokenlimit

import (
	"log/slog"
	"math"
	"sync"
	"time"
)

// Config is the limit's settings.
type Config struct {
	// PerAddress is how many wrong tokens one client address may send at
	// once, and per minute after that; Overall the same for every address
	// together.
	PerAddress, Overall int
	// Backoff is how long after a bucket's last wrong or refused token any
	// token is refused while the bucket is empty.
	Backoff time.Duration
	// MaxAddresses bounds the addresses remembered; past it, an address
	// seen for the first time is held by the overall limit only.
	MaxAddresses int
}

// Limiter is safe for concurrent use.
type Limiter struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	overall bucket
	addrs   map[string]*bucket
}

// bucket counts one key's wrong tokens.
type bucket struct {
	tokens    float64   // may go below 0: refused tokens cost too, up to a bucket's size
	at        time.Time // when tokens was last refilled
	lastWrong time.Time // the last wrong or refused token
	locked    bool      // a lockout is under way (and was logged)
}

func New(cfg Config, log *slog.Logger) *Limiter {
	return &Limiter{cfg: cfg, log: log, addrs: map[string]*bucket{}}
}

// refill brings b up to now at size tokens a minute; a new bucket is full.
func (b *bucket) refill(now time.Time, size int) {
	if b.at.IsZero() {
		b.tokens, b.at = float64(size), now
		return
	}
	if now.After(b.at) {
		b.tokens = math.Min(float64(size), b.tokens+now.Sub(b.at).Minutes()*float64(size))
		b.at = now
	}
	if b.tokens >= 1 {
		b.locked = false
	}
}

// holds reports whether b refuses every token now.
func (b *bucket) holds(now time.Time, backoff time.Duration) bool {
	return b.tokens < 1 && now.Sub(b.lastWrong) < backoff
}

// cost takes one token (no more than size into debt) and logs the start
// of a lockout.
func (l *Limiter) cost(b *bucket, key string, size int, now time.Time) {
	b.tokens = math.Max(b.tokens-1, float64(-size))
	b.lastWrong = now
	if b.tokens < 1 && !b.locked {
		b.locked = true
		l.log.Warn("wrong admin tokens: locked out", "client", key, "wrong_per_minute", size,
			"right_token_backoff", l.cfg.Backoff.String())
	}
}

// Check answers a request that presented a token from addr: right is
// whether it is the admin token. A refusal returns how long to wait before
// trying again, the same for a right and a wrong token so the answer says
// nothing of the token; 0 lets the request be answered as its token
// deserves. A wrong token, and a refused one, costs.
func (l *Limiter) Check(addr string, right bool, now time.Time) (retryAfter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.overall.refill(now, l.cfg.Overall)
	a := l.addrs[addr]
	if a == nil && !right {
		a = l.remember(addr, now)
	}
	if a != nil {
		a.refill(now, l.cfg.PerAddress)
	}
	refused := l.overall.holds(now, l.cfg.Backoff) || a != nil && a.holds(now, l.cfg.Backoff)
	if right && !refused {
		return 0
	}
	l.cost(&l.overall, "overall", l.cfg.Overall, now)
	if a != nil {
		l.cost(a, addr, l.cfg.PerAddress, now)
	}
	if refused {
		return l.cfg.Backoff
	}
	return 0
}

// remember starts a bucket for addr, first forgetting the addresses whose
// buckets are full again when there are too many; nil when none can go.
func (l *Limiter) remember(addr string, now time.Time) *bucket {
	if len(l.addrs) >= l.cfg.MaxAddresses {
		for k, b := range l.addrs {
			if b.refill(now, l.cfg.PerAddress); b.tokens >= float64(l.cfg.PerAddress) {
				delete(l.addrs, k)
			}
		}
		if len(l.addrs) >= l.cfg.MaxAddresses {
			return nil
		}
	}
	b := &bucket{}
	l.addrs[addr] = b
	return b
}
