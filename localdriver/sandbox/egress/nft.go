//go:build linux

package egress

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// ICMP codes of the reject verdict: "administratively prohibited", so that a
// connect fails at once (EHOSTUNREACH) instead of timing out.
const (
	icmpAdminProhibited   = 13
	icmpv6AdminProhibited = 1
)

// install writes rs into the network namespace open at netns, over netlink
// (one batch: it applies whole or not at all).
func install(netns int, rs ruleset) error {
	c, err := nftables.New(nftables.WithNetNSFd(netns))
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	v4 := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv4, Name: "sless"})
	if len(rs.loopback) > 0 {
		translate := c.AddChain(&nftables.Chain{Name: "loopback", Table: v4, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest})
		for _, port := range rs.loopback {
			for _, proto := range []uint8{protoTCP, protoUDP} {
				exprs := append(matchDst(hostLoopback.AsSlice(), 32), matchPort(proto, port)...)
				exprs = append(exprs,
					&expr.Immediate{Register: 1, Data: gateway.AsSlice()},
					&expr.Immediate{Register: 2, Data: binary.BigEndian.AppendUint16(nil, port)},
					&expr.NAT{Type: expr.NATTypeDestNAT, Family: unix.NFPROTO_IPV4, RegAddrMin: 1, RegProtoMin: 2, Specified: true})
				c.AddRule(&nftables.Rule{Table: v4, Chain: translate, Exprs: exprs})
			}
		}
		masq := c.AddChain(&nftables.Chain{Name: "masquerade", Table: v4, Type: nftables.ChainTypeNAT,
			Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource})
		exprs := append(matchOif(tapName), matchAddr(srcOffset, loopbackNet.Addr().AsSlice(), loopbackNet.Bits())...)
		c.AddRule(&nftables.Rule{Table: v4, Chain: masq, Exprs: append(exprs, &expr.Masq{})})
	}
	accept := nftables.ChainPolicyAccept
	drop := nftables.ChainPolicyDrop
	policy := &drop
	if rs.internet {
		policy = &accept
	}
	out := c.AddChain(&nftables.Chain{Name: "output", Table: v4, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: policy})
	for _, r := range rs.filter {
		var exprs []expr.Any
		if r.loopbackIf {
			exprs = append(exprs, matchOif("lo")...)
		}
		if r.dst.IsValid() {
			exprs = append(exprs, matchDst(r.dst.Addr().AsSlice(), r.dst.Bits())...)
		}
		if r.proto != 0 {
			exprs = append(exprs, matchPort(r.proto, r.port)...)
		}
		c.AddRule(&nftables.Rule{Table: v4, Chain: out, Exprs: append(exprs, verdict(r.accept, icmpAdminProhibited))})
	}
	if !rs.internet {
		c.AddRule(&nftables.Rule{Table: v4, Chain: out, Exprs: []expr.Any{verdict(false, icmpAdminProhibited)}})
	}

	v6 := c.AddTable(&nftables.Table{Family: nftables.TableFamilyIPv6, Name: "sless"})
	out6 := c.AddChain(&nftables.Chain{Name: "output", Table: v6, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &drop})
	c.AddRule(&nftables.Rule{Table: v6, Chain: out6, Exprs: append(matchOif("lo"), verdict(true, 0))})
	c.AddRule(&nftables.Rule{Table: v6, Chain: out6, Exprs: []expr.Any{verdict(false, icmpv6AdminProhibited)}})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("nftables: install the egress rules: %w", err)
	}
	return nil
}

// matchOif matches the outgoing interface by name.
func matchOif(name string) []expr.Any {
	data := make([]byte, unix.IFNAMSIZ)
	copy(data, name)
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: data},
	}
}

// The offsets of the source and destination addresses in an IPv4 header.
const (
	srcOffset = 12
	dstOffset = 16
)

// matchDst matches an IPv4 destination address in addr/bits.
func matchDst(addr []byte, bits int) []expr.Any { return matchAddr(dstOffset, addr, bits) }

// matchAddr matches the IPv4 address at offset of the header against addr/bits.
func matchAddr(offset uint32, addr []byte, bits int) []expr.Any {
	exprs := []expr.Any{&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4}}
	if bits < 32 {
		mask := binary.BigEndian.AppendUint32(nil, ^uint32(0)<<(32-bits))
		exprs = append(exprs, &expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: mask, Xor: make([]byte, 4)})
	}
	return append(exprs, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: addr})
}

// matchPort matches a transport protocol and, when port is not 0, its
// destination port.
func matchPort(proto uint8, port uint16) []expr.Any {
	exprs := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
	if port == 0 {
		return exprs
	}
	return append(exprs,
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, port)})
}

// verdict accepts, or rejects with an ICMP "unreachable" of code.
func verdict(accept bool, code uint8) expr.Any {
	if accept {
		return &expr.Verdict{Kind: expr.VerdictAccept}
	}
	return &expr.Reject{Type: unix.NFT_REJECT_ICMP_UNREACH, Code: code}
}
