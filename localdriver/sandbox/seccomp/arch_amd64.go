//go:build linux

package seccomp

import "golang.org/x/sys/unix"

// auditArch is seccomp_data.arch of an x86_64 call (a 32-bit one, made with
// int 0x80, says AUDIT_ARCH_I386 and is refused).
const auditArch = unix.AUDIT_ARCH_X86_64

// x32Bit marks a call of the x32 ABI (__X32_SYSCALL_BIT): it enters the
// kernel as x86_64 calls do and seccomp_data.arch says x86_64, but its
// numbers are others, so the filter refuses them all.
const x32Bit = 0x40000000

// absent are the calls of the policy that x86_64 does not have: none.
var absent = map[string]bool{}

// numbers are the x86_64 numbers of the policy's calls.
var numbers = map[string]uint32{
	"unshare":           unix.SYS_UNSHARE,
	"clone":             unix.SYS_CLONE,
	"clone3":            unix.SYS_CLONE3,
	"setns":             unix.SYS_SETNS,
	"mount":             unix.SYS_MOUNT,
	"umount2":           unix.SYS_UMOUNT2,
	"pivot_root":        unix.SYS_PIVOT_ROOT,
	"chroot":            unix.SYS_CHROOT,
	"move_mount":        unix.SYS_MOVE_MOUNT,
	"open_tree":         unix.SYS_OPEN_TREE,
	"open_tree_attr":    unix.SYS_OPEN_TREE_ATTR,
	"fsopen":            unix.SYS_FSOPEN,
	"fsconfig":          unix.SYS_FSCONFIG,
	"fsmount":           unix.SYS_FSMOUNT,
	"fspick":            unix.SYS_FSPICK,
	"mount_setattr":     unix.SYS_MOUNT_SETATTR,
	"keyctl":            unix.SYS_KEYCTL,
	"add_key":           unix.SYS_ADD_KEY,
	"request_key":       unix.SYS_REQUEST_KEY,
	"ptrace":            unix.SYS_PTRACE,
	"process_vm_readv":  unix.SYS_PROCESS_VM_READV,
	"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
	"kcmp":              unix.SYS_KCMP,
	"pidfd_getfd":       unix.SYS_PIDFD_GETFD,
	"init_module":       unix.SYS_INIT_MODULE,
	"finit_module":      unix.SYS_FINIT_MODULE,
	"delete_module":     unix.SYS_DELETE_MODULE,
	"kexec_load":        unix.SYS_KEXEC_LOAD,
	"kexec_file_load":   unix.SYS_KEXEC_FILE_LOAD,
	"bpf":               unix.SYS_BPF,
	"perf_event_open":   unix.SYS_PERF_EVENT_OPEN,
	"userfaultfd":       unix.SYS_USERFAULTFD,
	"reboot":            unix.SYS_REBOOT,
	"swapon":            unix.SYS_SWAPON,
	"swapoff":           unix.SYS_SWAPOFF,
	"acct":              unix.SYS_ACCT,
	"syslog":            unix.SYS_SYSLOG,
	"quotactl":          unix.SYS_QUOTACTL,
	"quotactl_fd":       unix.SYS_QUOTACTL_FD,
	"lookup_dcookie":    unix.SYS_LOOKUP_DCOOKIE,
	"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
	"name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
	"iopl":              unix.SYS_IOPL,
	"ioperm":            unix.SYS_IOPERM,
	"uselib":            unix.SYS_USELIB,
	"vhangup":           unix.SYS_VHANGUP,
	"ioctl":             unix.SYS_IOCTL,
	"fanotify_init":     unix.SYS_FANOTIFY_INIT,
	"settimeofday":      unix.SYS_SETTIMEOFDAY,
	"clock_settime":     unix.SYS_CLOCK_SETTIME,
	"clock_adjtime":     unix.SYS_CLOCK_ADJTIME,
	"io_uring_setup":    unix.SYS_IO_URING_SETUP,
	"io_uring_enter":    unix.SYS_IO_URING_ENTER,
	"io_uring_register": unix.SYS_IO_URING_REGISTER,
}
