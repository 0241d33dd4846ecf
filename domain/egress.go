package domain

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// EgressRule is one destination the operator opens to functions
// (SLESS_EGRESS_ALLOW): every address of Prefix, on Port only when Port is
// not 0 (TCP and UDP). Without rules a function reaches the internet and
// nothing of EgressBlocked; both drivers enforce the same (the local
// driver's sandbox network, the Kubernetes driver's NetworkPolicy).
type EgressRule struct {
	Prefix netip.Prefix
	Port   uint16
}

// String writes the rule as ParseEgressAllow reads it.
func (r EgressRule) String() string {
	host := r.Prefix.String()
	if r.Prefix.IsSingleIP() {
		host = r.Prefix.Addr().String()
	}
	if r.Port == 0 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(int(r.Port)))
}

// HostLoopback reports whether the rule opens a port of the machine's own
// loopback (127.0.0.1:port): a local function's host, a database there.
// It means nothing on Kubernetes, where a pod's loopback is its own.
func (r EgressRule) HostLoopback() bool {
	return r.Prefix.IsSingleIP() && r.Prefix.Addr() == hostLoopback
}

var (
	hostLoopback = netip.MustParseAddr("127.0.0.1")
	loopbackNet  = netip.MustParsePrefix("127.0.0.0/8")
)

// EgressBlocked are the IPv4 ranges a function never reaches unless a rule
// opens them: the IANA special-purpose ranges that are not the internet —
// this network, private (RFC 1918), shared address space (carrier-grade
// NAT), loopback, link-local (the cloud metadata endpoint 169.254.169.254),
// IETF protocol assignments, benchmarking, multicast and reserved. The
// documentation ranges (TEST-NET-1..3) are routed nowhere and not in it.
// Drivers block the addresses of their own machines besides these.
var EgressBlocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("10.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	loopbackNet,
	netip.MustParsePrefix("169.254.0.0/16"),
	netip.MustParsePrefix("172.16.0.0/12"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.168.0.0/16"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("224.0.0.0/4"),
	netip.MustParsePrefix("240.0.0.0/4"),
}

// ParseEgressAllow parses an allow-list: entries separated by commas or
// spaces, each a CIDR ("10.20.0.0/16"), an address ("10.20.1.5"), an
// address with a port ("10.20.1.5:5432"), or localhost with a port
// ("localhost:5432", which is 127.0.0.1:5432). The machine's loopback can be
// opened one port at a time, at 127.0.0.1 only: all of it would open the
// platform's own ports. Functions get no IPv6, so IPv6 entries are refused,
// and so is every address at once (open the internet's ranges, not 0/0).
// Bad entries are EINVALID, naming the entry.
func ParseEgressAllow(s string) ([]EgressRule, error) {
	var rules []EgressRule
	for _, entry := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		r, err := parseEgressEntry(entry)
		if err != nil {
			return nil, Errorf(EINVALID, "egress allow-list entry %q: %v", entry, err)
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func parseEgressEntry(entry string) (EgressRule, error) {
	if p, err := netip.ParsePrefix(entry); err == nil {
		return checkEgress(EgressRule{Prefix: p.Masked()})
	}
	if a, err := netip.ParseAddr(entry); err == nil {
		return checkEgress(EgressRule{Prefix: netip.PrefixFrom(a, a.BitLen())})
	}
	host, portText, err := net.SplitHostPort(entry)
	if err != nil {
		return EgressRule{}, fmt.Errorf("want a CIDR, an address, or address:port")
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return EgressRule{}, fmt.Errorf("bad port %q", portText)
	}
	if host == "localhost" {
		host = hostLoopback.String()
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return EgressRule{}, fmt.Errorf("%q is not an address (host names are not resolved: name the address)", host)
	}
	return checkEgress(EgressRule{Prefix: netip.PrefixFrom(a, a.BitLen()), Port: uint16(port)})
}

// CheckEgressRule refuses a rule no function can be given: IPv6, every
// address, the machine's loopback but one port of 127.0.0.1.
func CheckEgressRule(r EgressRule) error {
	_, err := checkEgress(r)
	return err
}

func checkEgress(r EgressRule) (EgressRule, error) {
	a := r.Prefix.Addr()
	switch {
	case !a.Is4() || a.Is4In6():
		return r, fmt.Errorf("IPv6 is not provided to functions")
	case r.Prefix.Bits() == 0:
		return r, fmt.Errorf("opens every address; name the networks instead")
	case loopbackNet.Overlaps(r.Prefix) && !r.Prefix.IsSingleIP():
		return r, fmt.Errorf("opens the host's loopback: open single ports of 127.0.0.1 instead")
	case loopbackNet.Contains(a) && a != hostLoopback:
		return r, fmt.Errorf("only 127.0.0.1 of the host's loopback can be opened")
	case r.HostLoopback() && r.Port == 0:
		return r, fmt.Errorf("opens every port of the host's loopback, the platform's own included: add a port")
	}
	return r, nil
}

// EgressBlockedAddr reports whether a is in EgressBlocked (or is not IPv4).
func EgressBlockedAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return true
	}
	for _, b := range EgressBlocked {
		if b.Contains(a) {
			return true
		}
	}
	return false
}
