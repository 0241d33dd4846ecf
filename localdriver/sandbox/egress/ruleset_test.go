package egress

import (
	"net/netip"
	"testing"
)

// The ruleset of a function with one port of the host's loopback and one
// private network opened, on a machine whose address is 192.0.2.2: read it
// as the policy the README promises.
func TestRulesetOfAFunction(t *testing.T) {
	allow, err := ParseAllow("127.0.0.1:5432,10.20.0.0/16")
	if err != nil {
		t.Fatal(err)
	}
	got := rulesFor(Policy{Internet: true, Allow: allow}, []netip.Prefix{netip.MustParsePrefix("192.0.2.2/32")}).String()
	want := `table ip sless {
	chain loopback {
		type nat hook output priority -100; policy accept;
		ip daddr 127.0.0.1 tcp dport 5432 dnat to 10.0.2.2:5432
		ip daddr 127.0.0.1 udp dport 5432 dnat to 10.0.2.2:5432
	}
	chain masquerade {
		type nat hook postrouting priority 100; policy accept;
		oifname "tap0" ip saddr 127.0.0.0/8 masquerade
	}
	chain output {
		type filter hook output priority 0; policy accept;
		oifname "lo" accept # the sandbox itself
		ip daddr 10.0.2.3/32 udp dport 53 accept # DNS (slirp4netns forwards it to the host's resolvers)
		ip daddr 10.0.2.3/32 tcp dport 53 accept # DNS over TCP
		ip daddr 10.0.2.2/32 tcp dport 5432 accept # allowed: 127.0.0.1:5432
		ip daddr 10.0.2.2/32 udp dport 5432 accept # allowed: 127.0.0.1:5432
		ip daddr 10.20.0.0/16 accept # allowed: 10.20.0.0/16
		ip daddr 10.0.2.0/24 reject with icmp type admin-prohibited # the link's gateway and DNS on other ports
		ip daddr 0.0.0.0/8 reject with icmp type admin-prohibited # not the internet
		ip daddr 10.0.0.0/8 reject with icmp type admin-prohibited # not the internet
		ip daddr 100.64.0.0/10 reject with icmp type admin-prohibited # not the internet
		ip daddr 127.0.0.0/8 reject with icmp type admin-prohibited # not the internet
		ip daddr 169.254.0.0/16 reject with icmp type admin-prohibited # not the internet
		ip daddr 172.16.0.0/12 reject with icmp type admin-prohibited # not the internet
		ip daddr 192.0.0.0/24 reject with icmp type admin-prohibited # not the internet
		ip daddr 192.168.0.0/16 reject with icmp type admin-prohibited # not the internet
		ip daddr 198.18.0.0/15 reject with icmp type admin-prohibited # not the internet
		ip daddr 224.0.0.0/4 reject with icmp type admin-prohibited # not the internet
		ip daddr 240.0.0.0/4 reject with icmp type admin-prohibited # not the internet
		ip daddr 192.0.2.2/32 reject with icmp type admin-prohibited # this machine's own address
	}
}
table ip6 sless {
	chain output {
		type filter hook output priority 0; policy drop;
		oifname "lo" accept # the sandbox itself
		reject with icmpv6 type admin-prohibited # no IPv6 beyond it
	}
}
`
	if got != want {
		t.Errorf("ruleset:\n%s\nwant:\n%s", got, want)
	}
}
