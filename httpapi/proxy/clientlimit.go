package proxy

import (
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"
)

// maxClients bounds the buckets a clientLimiter keeps (about 15 MiB): past
// it, new clients pass unlimited until idle buckets are dropped. The limit
// is there to stop one client; a flood from many addresses is the network
// edge's to stop, and must not make the proxy's memory grow without bound.
const maxClients = 1 << 18

// clientLimiter is a token bucket per client address (IPv4, or IPv6 /64:
// one host gets a whole /64). A bucket left alone until it is full again is
// the same as none, so those are dropped: memory follows the clients of the
// last refill period, not every client ever seen.
type clientLimiter struct {
	rate  float64       // tokens per second
	burst float64       // bucket size
	idle  time.Duration // how long an empty bucket takes to be full

	mu      sync.Mutex
	buckets map[netip.Addr]bucket
	sweepAt time.Time // next sweep of full buckets
	sweptAt time.Time
}

// bucket is one client's tokens as of last (unix nanoseconds).
type bucket struct {
	tokens float64
	last   int64
}

// newClientLimiter returns a limiter of perSecond requests per client with
// burst (at least 1; 0 means perSecond rounded up).
func newClientLimiter(perSecond float64, burst int) *clientLimiter {
	if burst <= 0 {
		burst = int(math.Ceil(perSecond))
	}
	burst = max(burst, 1)
	idle := time.Duration(float64(burst) / perSecond * float64(time.Second))
	return &clientLimiter{rate: perSecond, burst: float64(burst), idle: idle, buckets: map[netip.Addr]bucket{}}
}

// allow takes a token from the bucket of addr; without one it returns false
// and how long until there is one.
func (l *clientLimiter) allow(addr netip.Addr, now time.Time) (bool, time.Duration) {
	if addr.Is6() {
		addr = netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.sweepAt) || len(l.buckets) >= maxClients && now.Sub(l.sweptAt) >= time.Second {
		l.sweep(now)
	}
	b, ok := l.buckets[addr]
	switch {
	case ok:
		b.tokens = min(l.burst, b.tokens+float64(now.UnixNano()-b.last)/float64(time.Second)*l.rate)
	case len(l.buckets) >= maxClients:
		return true, 0
	default:
		b.tokens = l.burst
	}
	b.last = now.UnixNano()
	if b.tokens < 1 {
		l.buckets[addr] = b
		return false, time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	}
	b.tokens--
	l.buckets[addr] = b
	return true, 0
}

// sweep drops the buckets that are full again; l.mu is held.
func (l *clientLimiter) sweep(now time.Time) {
	cutoff := now.Add(-l.idle).UnixNano()
	for a, b := range l.buckets {
		if b.last <= cutoff {
			delete(l.buckets, a)
		}
	}
	l.sweptAt, l.sweepAt = now, now.Add(max(l.idle, 10*time.Second))
}

// size is the number of buckets kept.
func (l *clientLimiter) size() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.buckets)
}

// clientAddr is the address of the client that sent r: the peer, or, when
// the peer is a trusted proxy, the last X-Forwarded-For address that is not
// itself a trusted proxy — those before it are whatever the client wrote.
// It is the zero Addr when the peer's address cannot be parsed.
func (p *Proxy) clientAddr(r *http.Request) netip.Addr {
	ip := peerAddr(r.RemoteAddr)
	if !ip.IsValid() || !p.trustedAddr(ip) {
		return ip
	}
	xff := r.Header.Values("X-Forwarded-For")
	for i := len(xff) - 1; i >= 0; i-- {
		hops := strings.Split(xff[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a, ok := parseHop(strings.TrimSpace(hops[j]))
			if !ok {
				return ip // a trusted proxy wrote what it could not read: stop at it
			}
			ip = a
			if !p.trustedAddr(a) {
				return a
			}
		}
	}
	return ip
}

// parseHop reads one X-Forwarded-For entry: an address, with a port or not.
func parseHop(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// rateLimited answers a client over its ClientRate: 429 with Retry-After.
// Nothing is recorded: the log is the functions' owners', and a flood from
// one client must not fill it.
func (p *Proxy) rateLimited(w http.ResponseWriter, wait time.Duration) {
	p.metrics.proxyErrors.WithLabelValues("client_rate").Inc()
	secs := retryAfter(wait)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, errClientRate)
}

// retryAfter is a wait in whole seconds, at least 1.
func retryAfter(wait time.Duration) int {
	return max(int(math.Ceil(wait.Seconds())), 1)
}
