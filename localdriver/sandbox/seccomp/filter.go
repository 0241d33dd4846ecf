package seccomp

import (
	"encoding/binary"
	"runtime"
	"slices"
	"syscall"

	"golang.org/x/net/bpf"

	"github.com/slessio/sless/domain"
)

// Rule is one system call the filter refuses.
type Rule struct {
	// Name is the call's name, as syscalls(2) spells it.
	Name string
	// Nr is its number on the running architecture.
	Nr uint32
	// Errno is what the call returns instead of running.
	Errno syscall.Errno
	// Flags, when not zero, narrows the rule to calls whose first argument
	// has one of these bits set (the CLONE_NEW* flags of clone and
	// unshare); the others run.
	Flags uint32
	// Requests, when not empty, narrows the rule to calls whose second
	// argument is one of these (the ioctl requests TIOCSTI and TIOCLINUX);
	// the others run.
	Requests []uint32
}

// Denied lists the system calls the filter refuses, with the errno each
// gets, in the order the filter checks them, for docs and tests. It is
// empty on an architecture Filter does not know.
func Denied() []Rule {
	rules, _ := rules()
	return rules
}

// Filter returns the sandbox's seccomp filter for the running architecture,
// as bwrap's --seccomp reads it: a cBPF program, an array of struct
// sock_filter in native byte order. It returns EUNAVAILABLE on an
// architecture it does not know.
func Filter() ([]byte, error) {
	rules, err := rules()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(program(rules))
	if err != nil {
		return nil, domain.Errorf(domain.EINTERNAL, "seccomp: assemble the filter: %v", err)
	}
	out := make([]byte, 0, len(raw)*8)
	for _, ins := range raw {
		out = binary.NativeEndian.AppendUint16(out, ins.Op)
		out = append(out, ins.Jt, ins.Jf)
		out = binary.NativeEndian.AppendUint32(out, ins.K)
	}
	return out, nil
}

// rules resolves the policy to the running architecture's numbers, leaving
// out the calls it does not have. It returns EUNAVAILABLE on an unknown
// architecture and EINTERNAL when a call of the policy has no number.
func rules() ([]Rule, error) {
	if auditArch == 0 {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "seccomp: no filter for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	rules := make([]Rule, 0, len(policy))
	for _, p := range policy {
		nr, ok := numbers[p.name]
		switch {
		case ok:
			rules = append(rules, Rule{Name: p.name, Nr: nr, Errno: p.errno, Flags: p.flags, Requests: slices.Clone(p.requests)})
		case !absent[p.name]:
			return nil, domain.Errorf(domain.EINTERNAL, "seccomp: no number for %s on %s", p.name, runtime.GOARCH)
		}
	}
	return rules, nil
}

// The parts of struct seccomp_data (linux/seccomp.h) the filter reads, as
// offsets of 32-bit words in native byte order. The low word of a 64-bit
// argument comes first on the little-endian architectures this package
// knows.
const (
	offNr      = 0  // int nr
	offArch    = 4  // __u32 arch
	offArg0Low = 16 // the low half of __u64 args[0]
	offArg1Low = 24 // the low half of __u64 args[1]
)

// The filter's answers (linux/seccomp.h).
const (
	retAllow = 0x7fff0000 // SECCOMP_RET_ALLOW
	retErrno = 0x00050000 // SECCOMP_RET_ERRNO, with the errno in the low 16 bits
)

// program is the filter: a call of another architecture, or of the x32 ABI,
// gets ENOSYS; a call of rules gets its errno; anything else runs. It only
// jumps forward, by a few instructions.
func program(rules []Rule) []bpf.Instruction {
	enosys := bpf.RetConstant{Val: retErrno | uint32(syscall.ENOSYS)}
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		enosys,
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if x32Bit != 0 {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: x32Bit, SkipFalse: 1}, enosys)
	}
	for _, r := range rules {
		refuse := bpf.RetConstant{Val: retErrno | uint32(r.Errno)}
		// An argument replaces the number in A, so a call whose rule looks
		// at one ends there either way.
		switch {
		case r.Flags != 0:
			p = append(p,
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.Nr, SkipFalse: 4},
				bpf.LoadAbsolute{Off: offArg0Low, Size: 4},
				bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: r.Flags, SkipFalse: 1},
				refuse,
				bpf.RetConstant{Val: retAllow},
			)
		case len(r.Requests) > 0:
			n := len(r.Requests)
			p = append(p,
				bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.Nr, SkipFalse: uint8(n + 3)},
				bpf.LoadAbsolute{Off: offArg1Low, Size: 4},
			)
			for i, req := range r.Requests {
				p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: req, SkipTrue: uint8(n - i)})
			}
			p = append(p, bpf.RetConstant{Val: retAllow}, refuse)
		default:
			p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: r.Nr, SkipFalse: 1}, refuse)
		}
	}
	return append(p, bpf.RetConstant{Val: retAllow})
}
