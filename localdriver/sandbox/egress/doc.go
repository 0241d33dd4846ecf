// Package egress gives a sandbox's network namespace its way out, under a
// policy: what function code may reach and what it may not.
//
// A sandbox (package sandbox) runs in a network namespace of its own, which
// has only its loopback: no other tenant, no port of the host, not even the
// host's 127.0.0.1 is there. The platform reaches a function through a Unix
// socket it passes in (package localdriver), not through the network. For
// the way out, Attach connects the namespace to slirp4netns (user-mode
// networking, as rootless Podman uses): a tap0 device on 10.0.2.0/24 whose
// traffic slirp4netns re-sends from ordinary sockets of the host, the
// gateway 10.0.2.2 and a DNS forwarder at 10.0.2.3 (the sandbox's
// resolv.conf names it). slirp4netns itself runs in its own sandbox and
// seccomp filter (--enable-sandbox --enable-seccomp) and dies with the
// platform.
//
// # The policy
//
// Before slirp4netns attaches, and so before the sandbox's program runs,
// the namespace gets an nftables output filter (installed over netlink,
// in one batch; Network.Rules shows it in nft syntax):
//
//   - the sandbox's own loopback, and DNS through 10.0.2.3, are open;
//   - what the operator opened (Options.Allow, SLESS_EGRESS_ALLOW: CIDRs,
//     addresses, host:port) is open, even inside the blocked ranges;
//   - blocked, with an immediate "administratively prohibited": the rest of
//     10.0.2.0/24, the host's own addresses (which would lead to the
//     platform's ports), and the ranges in Blocked — private (RFC 1918),
//     carrier-grade NAT, loopback, link-local with the cloud metadata
//     endpoint 169.254.169.254, multicast and reserved;
//   - everything else is the internet: open for functions and job runs
//     (Policy.Internet), closed for build steps, which get only their
//     package index (URLRules). No IPv6 is provided.
//
// The host's loopback is cut off from the gateway (--disable-host-loopback)
// unless the operator opened a port of it ("127.0.0.1:5432"): then the
// gateway leads there, the filter lets through only the opened ports, and
// the namespace translates 127.0.0.1:port to the gateway, so a function
// connects to 127.0.0.1:5432 as it would outside.
//
// The rules are written by the platform as root into a namespace that
// belongs to the host's user namespace; sandboxed processes run without
// capabilities there, so they cannot change them. A platform that is not
// root cannot write them (a sandbox's namespace then belongs to a user
// namespace of bwrap's, which a multi-threaded process cannot join): its
// sandboxes get the internet with the host's loopback cut off, and
// private and link-local ranges stay reachable; Network.Enforced says so.
//
// egress imports the standard library, x/sys/unix, google/nftables and domain.
package egress
