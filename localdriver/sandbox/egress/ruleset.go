package egress

import (
	"fmt"
	"net/netip"
	"strings"
)

// The sandbox's side of slirp4netns (its defaults): the sandbox is guest on
// slirpNet, its gateway forwards to the host's 127.0.0.1 unless
// --disable-host-loopback, and its DNS forwards to the host's resolvers.
var (
	slirpNet = netip.MustParsePrefix("10.0.2.0/24")
	gateway  = netip.MustParseAddr("10.0.2.2")
	dns      = netip.MustParseAddr(Nameserver)

	hostLoopback = netip.MustParseAddr("127.0.0.1")     // what the gateway leads to
	loopbackNet  = netip.MustParsePrefix("127.0.0.0/8") // masqueraded on the way out
)

// Nameserver is the address a sandbox's resolv.conf names: slirp4netns's
// DNS forwarder.
const Nameserver = "10.0.2.3"

// tapName is the sandbox's interface to slirp4netns.
const tapName = "tap0"

// Protocols a port rule matches.
const (
	protoTCP = 6
	protoUDP = 17
)

// ruleset is what a sandbox's network namespace is given: an output filter
// evaluated in order (first match wins, then the default), and the ports of
// the host's loopback that 127.0.0.1 inside is translated to.
type ruleset struct {
	filter   []filterRule
	internet bool     // the default: accept (true) or reject
	loopback []uint16 // 127.0.0.1:port → gateway:port, TCP and UDP
}

// filterRule matches outgoing packets by interface, destination and port.
type filterRule struct {
	loopbackIf bool         // leaving through lo (the sandbox talking to itself)
	dst        netip.Prefix // invalid: any destination
	proto      uint8        // 0: any protocol (then no port)
	port       uint16       // 0: any port
	accept     bool         // else reject
	why        string       // a comment, for the rendering
}

// rulesFor returns the ruleset of p for a machine with the addresses hosts.
// Order matters: the sandbox's loopback, then DNS, then what the operator
// opened, then the blocked ranges, then the default.
func rulesFor(p Policy, hosts []netip.Prefix) ruleset {
	rs := ruleset{internet: p.Internet}
	rs.filter = append(rs.filter, filterRule{loopbackIf: true, accept: true, why: "the sandbox itself"})
	if p.None() {
		return rs
	}
	dnsHost := netip.PrefixFrom(dns, 32)
	rs.filter = append(rs.filter,
		filterRule{dst: dnsHost, proto: protoUDP, port: 53, accept: true, why: "DNS (slirp4netns forwards it to the host's resolvers)"},
		filterRule{dst: dnsHost, proto: protoTCP, port: 53, accept: true, why: "DNS over TCP"})
	for _, r := range p.Allow {
		dst := r.Prefix
		if r.HostLoopback() {
			rs.loopback = append(rs.loopback, r.Port)
			dst = netip.PrefixFrom(gateway, 32) // where the translation sends it
		}
		if r.Port == 0 {
			rs.filter = append(rs.filter, filterRule{dst: dst, accept: true, why: "allowed: " + r.String()})
			continue
		}
		for _, proto := range []uint8{protoTCP, protoUDP} {
			rs.filter = append(rs.filter, filterRule{dst: dst, proto: proto, port: r.Port, accept: true, why: "allowed: " + r.String()})
		}
	}
	rs.filter = append(rs.filter, filterRule{dst: slirpNet, why: "the link's gateway and DNS on other ports"})
	for _, b := range Blocked {
		rs.filter = append(rs.filter, filterRule{dst: b, why: "not the internet"})
	}
	for _, h := range hosts {
		rs.filter = append(rs.filter, filterRule{dst: h, why: "this machine's own address"})
	}
	return rs
}

// String renders the ruleset in nft(8) syntax: what `nft list ruleset` in the
// sandbox's namespace shows, for logs, docs and tests.
func (rs ruleset) String() string {
	var b strings.Builder
	b.WriteString("table ip sless {\n")
	if len(rs.loopback) > 0 {
		b.WriteString("\tchain loopback {\n\t\ttype nat hook output priority -100; policy accept;\n")
		for _, port := range rs.loopback {
			for _, proto := range []string{"tcp", "udp"} {
				fmt.Fprintf(&b, "\t\tip daddr %s %s dport %d dnat to %s:%d\n", hostLoopback, proto, port, gateway, port)
			}
		}
		fmt.Fprintf(&b, "\t}\n\tchain masquerade {\n\t\ttype nat hook postrouting priority 100; policy accept;\n")
		fmt.Fprintf(&b, "\t\toifname %q ip saddr %s masquerade\n\t}\n", tapName, loopbackNet)
	}
	policy := "drop"
	if rs.internet {
		policy = "accept"
	}
	fmt.Fprintf(&b, "\tchain output {\n\t\ttype filter hook output priority 0; policy %s;\n", policy)
	for _, r := range rs.filter {
		var m []string
		if r.loopbackIf {
			m = append(m, `oifname "lo"`)
		}
		if r.dst.IsValid() {
			m = append(m, "ip daddr "+r.dst.String())
		}
		switch r.proto {
		case protoTCP:
			m = append(m, fmt.Sprintf("tcp dport %d", r.port))
		case protoUDP:
			m = append(m, fmt.Sprintf("udp dport %d", r.port))
		}
		verdict := "reject with icmp type admin-prohibited"
		if r.accept {
			verdict = "accept"
		}
		m = append(m, verdict)
		fmt.Fprintf(&b, "\t\t%s # %s\n", strings.Join(m, " "), r.why)
	}
	if !rs.internet {
		b.WriteString("\t\treject with icmp type admin-prohibited # nothing else\n")
	}
	b.WriteString("\t}\n}\n")
	b.WriteString("table ip6 sless {\n\tchain output {\n\t\ttype filter hook output priority 0; policy drop;\n")
	b.WriteString("\t\toifname \"lo\" accept # the sandbox itself\n\t\treject with icmpv6 type admin-prohibited # no IPv6 beyond it\n\t}\n}\n")
	return b.String()
}
