package egress

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/slessio/sless/domain"
)

// Rule is one destination opened to sandboxes (domain.EgressRule).
type Rule = domain.EgressRule

// ParseAllow parses an allow-list (SLESS_EGRESS_ALLOW), as
// domain.ParseEgressAllow does, and refuses what would overlap a sandbox's
// own network. Bad entries are EINVALID.
func ParseAllow(s string) ([]Rule, error) {
	rules, err := domain.ParseEgressAllow(s)
	if err != nil {
		return nil, err
	}
	if err := checkRules(rules); err != nil {
		return nil, err
	}
	return rules, nil
}

// checkRules refuses rules that lie in a sandbox's own network (EINVALID).
func checkRules(rules []Rule) error {
	for _, r := range rules {
		if slirpNet.Overlaps(r.Prefix) {
			return domain.Errorf(domain.EINVALID, "egress allow-list entry %q is inside the sandbox's own network %s", r, slirpNet)
		}
	}
	return nil
}

// resolve returns the IPv4 addresses of host: itself when it is one.
func resolve(host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %v", host, err)
	}
	var out []netip.Addr
	for _, ip := range ips {
		if a, ok := netip.AddrFromSlice(ip); ok && a.Unmap().Is4() {
			out = append(out, a.Unmap())
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s has no IPv4 address (sandboxes have no IPv6)", host)
	}
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out), nil
}

// URLRules returns the rules that open the host and port of each URL (a
// package index, a module proxy), for a build step that must reach them and
// nothing else. URLs without a host (GOPROXY's "direct", "off", a file: URL)
// open nothing. EINVALID when a host cannot be resolved.
func URLRules(urls ...string) ([]Rule, error) {
	var rules []Rule
	for _, raw := range urls {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil || u.Host == "" {
			continue
		}
		port := u.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		if port == "" {
			continue
		}
		host := u.Hostname()
		if host == "localhost" {
			host = "127.0.0.1"
		}
		n, _ := strconv.ParseUint(port, 10, 16)
		addrs, err := resolve(host)
		for _, a := range addrs {
			r := Rule{Prefix: netip.PrefixFrom(a, a.BitLen()), Port: uint16(n)}
			if err == nil {
				err = domain.CheckEgressRule(r)
			}
			rules = append(rules, r)
		}
		if err == nil {
			err = checkRules(rules)
		}
		if err != nil {
			return nil, domain.Errorf(domain.EINVALID, "egress to %s: %v", u.Redacted(), err)
		}
	}
	return rules, nil
}

// Policy is what one sandbox may reach besides itself.
type Policy struct {
	// Internet opens every address outside the blocked ranges (Blocked and
	// the host's own addresses): what functions get. Build steps get only
	// their package index.
	Internet bool
	// Allow opens these destinations, inside the blocked ranges too.
	Allow []Rule
}

// None reports whether the policy opens nothing: the sandbox then gets no
// link at all, only its own loopback.
func (p Policy) None() bool { return !p.Internet && len(p.Allow) == 0 }

// Blocked are the ranges a sandbox never reaches unless a Rule opens them
// (domain.EgressBlocked); the host's own addresses are blocked besides.
var Blocked = domain.EgressBlocked

// IsBlocked reports whether a is in a blocked range or is one of this
// machine's addresses: a sandbox reaches it only when a Rule opens it.
func IsBlocked(a netip.Addr) bool {
	a = a.Unmap()
	if domain.EgressBlockedAddr(a) {
		return true
	}
	hosts, _ := hostAddrs()
	for _, h := range hosts {
		if h.Contains(a) {
			return true
		}
	}
	return false
}

// hostAddrs returns the IPv4 addresses of this machine's interfaces: a
// sandbox's traffic leaves from here, so each of them would lead it to the
// platform's own ports.
func hostAddrs() ([]netip.Prefix, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Prefix
	for _, a := range addrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ipnet.IP)
		if !ok || !ip.Unmap().Is4() || ip.Unmap().IsLoopback() {
			continue
		}
		out = append(out, netip.PrefixFrom(ip.Unmap(), 32))
	}
	return out, nil
}
