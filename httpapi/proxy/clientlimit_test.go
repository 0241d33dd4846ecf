package proxy

import (
	"net/http"
	"net/netip"
	"strconv"
	"testing"
	"time"
)

// TestClientLimiterDropsIdleBuckets: a bucket gives its burst, then refuses
// with the wait for a token; buckets full again are dropped, so memory
// follows the recent clients.
func TestClientLimiterDropsIdleBuckets(t *testing.T) {
	t.Parallel()
	l := newClientLimiter(10, 5)
	now := time.Unix(1000, 0)
	a := netip.MustParseAddr("192.0.2.1")
	for i := range 5 {
		if ok, _ := l.allow(a, now); !ok {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	if ok, wait := l.allow(a, now); ok || wait != 100*time.Millisecond {
		t.Fatalf("past the burst: %v, wait %v", ok, wait)
	}
	if ok, _ := l.allow(a, now.Add(100*time.Millisecond)); !ok {
		t.Fatal("refused after a token refilled")
	}
	for i := range 1000 {
		l.allow(netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)}), now)
	}
	if n := l.size(); n != 1001 {
		t.Fatalf("%d buckets", n)
	}
	// Past the sweep period every bucket is full again: all are dropped.
	l.allow(a, now.Add(11*time.Second))
	if n := l.size(); n != 1 {
		t.Fatalf("%d buckets after the idle ones were dropped, want 1", n)
	}
}

// TestClientLimiterIPv6: one IPv6 /64 is one client.
func TestClientLimiterIPv6(t *testing.T) {
	t.Parallel()
	l := newClientLimiter(1, 1)
	now := time.Unix(1000, 0)
	if ok, _ := l.allow(netip.MustParseAddr("2001:db8::1"), now); !ok {
		t.Fatal("first request refused")
	}
	if ok, _ := l.allow(netip.MustParseAddr("2001:db8::ffff"), now); ok {
		t.Fatal("another address of the same /64 had a bucket of its own")
	}
	if ok, _ := l.allow(netip.MustParseAddr("2001:db8:0:1::1"), now); !ok {
		t.Fatal("another /64 shared the bucket")
	}
}

// TestClientAddr: the client is the peer, unless the peer is a trusted
// proxy: then the last X-Forwarded-For hop that is not one.
func TestClientAddr(t *testing.T) {
	t.Parallel()
	p := &Proxy{cfg: Config{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}}
	for i, c := range []struct {
		peer string
		xff  []string
		want string
	}{
		{"192.0.2.1:5000", nil, "192.0.2.1"},
		{"192.0.2.1:5000", []string{"198.51.100.1"}, "192.0.2.1"}, // an untrusted peer's header is ignored
		{"10.0.0.1:5000", nil, "10.0.0.1"},
		{"10.0.0.1:5000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"10.0.0.1:5000", []string{"6.6.6.6, 198.51.100.1, 10.0.0.2"}, "198.51.100.1"},
		{"10.0.0.1:5000", []string{"6.6.6.6", "198.51.100.1:443"}, "198.51.100.1"},
		{"10.0.0.1:5000", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"10.0.0.1:5000", []string{"6.6.6.6, garbage, 10.0.0.2"}, "10.0.0.2"},
		{"[::ffff:10.0.0.1]:5000", []string{"2001:db8::1"}, "2001:db8::1"},
	} {
		r := &http.Request{RemoteAddr: c.peer, Header: http.Header{}}
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := p.clientAddr(r); got.String() != c.want {
			t.Errorf("case %s: %s %v → %s, want %s", strconv.Itoa(i), c.peer, c.xff, got, c.want)
		}
	}
}
