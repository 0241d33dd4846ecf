package httpapi

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/slessio/sless/domain"
)

// limiter keeps one token bucket per namespace. Buckets idle long enough to
// have refilled are dropped (a new one is identical), so memory follows the
// tenants active in the last few seconds, not every tenant ever seen.
type limiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*bucket
	sweepAt time.Time
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

// newLimiter returns a limiter of perSecond requests with burst; a negative
// perSecond allows everything.
func newLimiter(perSecond float64, burst int, now func() time.Time) *limiter {
	l := &limiter{limit: rate.Limit(perSecond), burst: burst, now: now, buckets: map[string]*bucket{}}
	if perSecond < 0 {
		l.limit = rate.Inf
	}
	return l
}

// refill is how long an idle bucket takes to be full again.
func (l *limiter) refill() time.Duration {
	if l.limit == rate.Inf {
		return 0
	}
	return time.Duration(float64(l.burst) / float64(l.limit) * float64(time.Second))
}

// allow takes a token from key's bucket. When there is none it returns false
// and how long until there will be one.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l.limit == rate.Inf {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.sweepAt) {
		idle := l.refill()
		for k, b := range l.buckets {
			if now.Sub(b.seen) > idle {
				delete(l.buckets, k)
			}
		}
		l.sweepAt = now.Add(max(idle, time.Minute))
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(l.limit, l.burst)}
		l.buckets[key] = b
	}
	b.seen = now
	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return false, d
	}
	return true, 0
}

// rateLimit applies the per-namespace token bucket, keyed by the namespace of
// the verified token (never by client address, which proxies can spoof).
// Over the limit it answers ERATELIMITED (429) with Retry-After in seconds.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ok, wait := s.limits.allow(principalOf(c).Namespace)
		if !ok {
			secs := int(math.Ceil(wait.Seconds()))
			c.Response().Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			return domain.Errorf(domain.ERATELIMITED, "rate limit exceeded for this namespace; retry in %d s", max(secs, 1))
		}
		return next(c)
	}
}
