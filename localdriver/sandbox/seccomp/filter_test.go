//go:build linux

package seccomp_test

import (
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"regexp"
	"runtime"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/slessio/sless/localdriver/sandbox/seccomp"
)

// decode splits a filter into its struct sock_filter instructions.
func decode(t *testing.T, b []byte) []bpf.RawInstruction {
	t.Helper()
	if len(b) == 0 || len(b)%unix.SizeofSockFilter != 0 {
		t.Fatalf("the filter is %d bytes, not a whole number of %d-byte instructions", len(b), unix.SizeofSockFilter)
	}
	prog := make([]bpf.RawInstruction, len(b)/unix.SizeofSockFilter)
	for i := range prog {
		ins := b[i*unix.SizeofSockFilter:]
		prog[i] = bpf.RawInstruction{Op: binary.NativeEndian.Uint16(ins), Jt: ins[2], Jf: ins[3], K: binary.NativeEndian.Uint32(ins[4:])}
	}
	return prog
}

// TestFilterIsAValidProgram checks what the kernel's seccomp checker would:
// a size it takes, loads of whole words inside struct seccomp_data, jumps
// that land inside the program, and a return at its end.
func TestFilterIsAValidProgram(t *testing.T) {
	t.Parallel()
	prog := decode(t, mustFilter(t))
	if len(prog) > unix.BPF_MAXINSNS {
		t.Fatalf("%d instructions, the kernel takes %d", len(prog), unix.BPF_MAXINSNS)
	}
	const sizeofSeccompData = 64
	for pc, ins := range prog {
		inRange := func(skip uint32) bool { return uint32(pc)+1+skip < uint32(len(prog)) }
		switch class := ins.Op & 0x07; {
		case ins.Op == unix.BPF_LD|unix.BPF_W|unix.BPF_ABS:
			if ins.K%4 != 0 || ins.K+4 > sizeofSeccompData {
				t.Errorf("%d: load at %d, outside seccomp_data's words", pc, ins.K)
			}
		case class == unix.BPF_JMP && ins.Op&0xf0 == unix.BPF_JA:
			if !inRange(ins.K) {
				t.Errorf("%d: jumps %d, past the end", pc, ins.K)
			}
		case class == unix.BPF_JMP:
			if !inRange(uint32(ins.Jt)) || !inRange(uint32(ins.Jf)) {
				t.Errorf("%d: jumps %d/%d, past the end", pc, ins.Jt, ins.Jf)
			}
		case ins.Op == unix.BPF_RET|unix.BPF_K:
		default:
			t.Errorf("%d: instruction %#x is not one the filter uses", pc, ins.Op)
		}
	}
	if last := prog[len(prog)-1]; last.Op != unix.BPF_RET|unix.BPF_K {
		t.Errorf("the program ends with %#x, not a return", last.Op)
	}
}

// The answers of the filter, from x/sys rather than the package.
const (
	allow = unix.SECCOMP_RET_ALLOW
	errno = unix.SECCOMP_RET_ERRNO
)

// TestFilterDecides runs the filter's bytes in x/net/bpf's virtual machine
// on every case: each denied call, clone and unshare with each flag and
// without, ioctl with each request and others, every other call number,
// other architectures and the x32 ABI.
func TestFilterDecides(t *testing.T) {
	t.Parallel()
	insns, ok := bpf.Disassemble(decode(t, mustFilter(t)))
	if !ok {
		t.Fatal("the filter has instructions x/net/bpf does not know")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatal(err)
	}
	arch := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		arch = unix.AUDIT_ARCH_AARCH64
	}
	decide := func(arch, nr uint32, args ...uint32) uint32 {
		// struct seccomp_data as the VM loads it: big-endian words, the low
		// word of each argument first as on the little-endian machines
		// known. The high words are all ones: the filter must not look.
		var data [64]byte
		binary.BigEndian.PutUint32(data[0:], nr)
		binary.BigEndian.PutUint32(data[4:], arch)
		for i := range 6 {
			var arg uint32
			if i < len(args) {
				arg = args[i]
			}
			binary.BigEndian.PutUint32(data[16+8*i:], arg)
			binary.BigEndian.PutUint32(data[20+8*i:], 0xffffffff)
		}
		v, err := vm.Run(data[:])
		if err != nil {
			t.Fatal(err)
		}
		return uint32(v)
	}
	check := func(what string, got, want uint32) {
		t.Helper()
		if got != want {
			t.Errorf("%s: %#x, want %#x", what, got, want)
		}
	}

	denied := map[uint32]bool{}
	for _, r := range seccomp.Denied() {
		denied[r.Nr] = true
		d, ok := mustDeny[r.Name]
		if !ok {
			continue // TestDenyList reports it
		}
		want := errno | uint32(d.errno)
		switch {
		case d.perFlag:
			var all uint32
			for flag, name := range cloneNewFlags {
				check(r.Name+" with "+name, decide(arch, r.Nr, uint32(flag)), want)
				all |= uint32(flag)
			}
			check(r.Name+" with no flags", decide(arch, r.Nr, 0), allow)
			check(r.Name+" with every other flag", decide(arch, r.Nr, ^all), allow)
		case len(d.requests) > 0:
			for _, req := range d.requests {
				check(r.Name+" "+ioctlNames[req], decide(arch, r.Nr, 0, uint32(req)), want)
				check(fmt.Sprintf("%s %#x", r.Name, req+1), decide(arch, r.Nr, 0, uint32(req+1)), allow)
			}
			check(r.Name+" TCGETS", decide(arch, r.Nr, uint32(unix.TIOCSTI), unix.TCGETS), allow)
		default:
			check(r.Name, decide(arch, r.Nr), want)
			check(r.Name, decide(arch, r.Nr, 0xffffffff, 0xffffffff), want)
		}
	}
	for nr := range uint32(1024) {
		if !denied[nr] {
			check(fmt.Sprintf("call %d", nr), decide(arch, nr, 0xffffffff, unix.TIOCSTI), allow)
		}
	}

	enosys := errno | uint32(unix.ENOSYS)
	for _, other := range []uint32{unix.AUDIT_ARCH_I386, unix.AUDIT_ARCH_ARM, unix.AUDIT_ARCH_X86_64, unix.AUDIT_ARCH_AARCH64, 0} {
		if other != arch {
			check(fmt.Sprintf("getpid of architecture %#x", other), decide(other, unix.SYS_GETPID, 0), enosys)
		}
	}
	const x32 = 0x40000000
	wantX32 := uint32(allow) // arm64 has no x32 ABI: the kernel refuses such numbers itself
	if runtime.GOARCH == "amd64" {
		wantX32 = enosys
	}
	check("x32 getpid", decide(arch, x32|unix.SYS_GETPID, 0), wantX32)
	check("x32 mount", decide(arch, x32|unix.SYS_MOUNT, 0), wantX32)
}

// TestDocNamesEveryDeniedCall keeps the package doc, which the README's
// security model cites, in step with the filter.
func TestDocNamesEveryDeniedCall(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	names := slices.Collect(maps.Keys(mustDeny))
	for _, r := range seccomp.Denied() {
		names = append(names, r.Name)
	}
	for _, name := range names {
		if !regexp.MustCompile(`\b` + name + `\b`).Match(doc) {
			t.Errorf("doc.go does not name %s", name)
		}
	}
}
