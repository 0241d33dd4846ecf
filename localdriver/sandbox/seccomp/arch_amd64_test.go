//go:build linux

package seccomp_test

import (
	"strings"
	"testing"
)

// pythonInt80 makes a 32-bit system call from a 64-bit process, as a
// program can on x86_64 (int 0x80: seccomp sees AUDIT_ARCH_I386), and
// prints what it returns: getpid (20 in the i386 table, sched_getscheduler
// on x86_64).
const pythonInt80 = `
import ctypes, mmap
code = bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])  # mov eax, 20; int 0x80; ret
buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write(code)
f = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
print('int80', f())
`

// TestI386CallsFail checks that the filter answers ENOSYS to a call of the
// i386 ABI, whose numbers the x86_64 deny list does not cover (i386's
// unshare is 310, x86_64's 272); without the filter (the control) the call
// runs and returns the PID.
func TestI386CallsFail(t *testing.T) {
	t.Parallel()
	bwrapPath(t)
	filter := mustFilter(t)
	pyExe, pyPrefix := mustPython(t)
	for _, as := range runners(t) {
		t.Run(as.name, func(t *testing.T) {
			t.Parallel()
			out, code := sandbox{as: as, filter: filter, reveal: []string{pyPrefix}}.run(t, pyExe, "-c", pythonInt80)
			if code != 0 || !strings.Contains(out, "int80 -38\n") {
				t.Errorf("under the filter: exit %d, want int80 -38 (ENOSYS):\n%s", code, out)
			}
			out, code = sandbox{as: as, reveal: []string{pyPrefix}}.run(t, pyExe, "-c", pythonInt80)
			if code != 0 || strings.Contains(out, "int80 -") || !strings.Contains(out, "int80 ") {
				t.Errorf("without the filter (the control): exit %d, want a PID:\n%s", code, out)
			}
		})
	}
}
