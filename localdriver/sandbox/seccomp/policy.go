package seccomp

import "syscall"

// The CLONE_NEW* flags: each makes a namespace (the package doc says why
// none may be made). All live in the low 32 bits of clone's and unshare's
// first argument, the only bits the filter looks at: legacy clone uses only
// those, and unshare refuses any higher bit (EINVAL).
const (
	cloneNewTime   = 0x00000080
	cloneNewNS     = 0x00020000
	cloneNewCgroup = 0x02000000
	cloneNewUTS    = 0x04000000
	cloneNewIPC    = 0x08000000
	cloneNewUser   = 0x10000000
	cloneNewPID    = 0x20000000
	cloneNewNet    = 0x40000000

	cloneNew = cloneNewTime | cloneNewNS | cloneNewCgroup | cloneNewUTS | cloneNewIPC |
		cloneNewUser | cloneNewPID | cloneNewNet
)

// The ioctl requests that put input into a terminal, the same on x86_64 and
// arm64 (asm-generic/ioctls.h). An ioctl request is an unsigned int: the
// kernel ignores the high half of the register, and so does the filter.
const (
	tiocsti   = 0x5412
	tioclinux = 0x541c
)

// policy is the deny list, in the order the filter checks it: the calls
// refused, what each returns instead, and for clone and unshare the flags,
// for ioctl the requests, that make them refused. The package doc gives the
// reasons; a test checks that it names every call here.
var policy = []struct {
	name     string
	errno    syscall.Errno
	flags    uint32
	requests []uint32
}{
	// Typing into the terminal. First: ioctl is frequent, and its answer
	// depends on an argument, so the kernel cannot cache it.
	{name: "ioctl", errno: syscall.EPERM, requests: []uint32{tiocsti, tioclinux}},

	// Namespaces.
	{name: "unshare", errno: syscall.EPERM, flags: cloneNew},
	{name: "clone", errno: syscall.EPERM, flags: cloneNew},
	{name: "clone3", errno: syscall.ENOSYS}, // its flags are in memory the filter cannot read; libcs fall back to clone
	{name: "setns", errno: syscall.EPERM},

	// Mounts.
	{name: "mount", errno: syscall.EPERM},
	{name: "umount2", errno: syscall.EPERM},
	{name: "pivot_root", errno: syscall.EPERM},
	{name: "chroot", errno: syscall.EPERM},
	{name: "move_mount", errno: syscall.EPERM},
	{name: "open_tree", errno: syscall.EPERM},
	{name: "open_tree_attr", errno: syscall.EPERM},
	{name: "fsopen", errno: syscall.EPERM},
	{name: "fsconfig", errno: syscall.EPERM},
	{name: "fsmount", errno: syscall.EPERM},
	{name: "fspick", errno: syscall.EPERM},
	{name: "mount_setattr", errno: syscall.EPERM},

	// The kernel keyring.
	{name: "keyctl", errno: syscall.EPERM},
	{name: "add_key", errno: syscall.EPERM},
	{name: "request_key", errno: syscall.EPERM},

	// Other processes.
	{name: "ptrace", errno: syscall.EPERM},
	{name: "process_vm_readv", errno: syscall.EPERM},
	{name: "process_vm_writev", errno: syscall.EPERM},
	{name: "kcmp", errno: syscall.EPERM},
	{name: "pidfd_getfd", errno: syscall.EPERM},

	// The kernel and the machine.
	{name: "init_module", errno: syscall.EPERM},
	{name: "finit_module", errno: syscall.EPERM},
	{name: "delete_module", errno: syscall.EPERM},
	{name: "kexec_load", errno: syscall.EPERM},
	{name: "kexec_file_load", errno: syscall.EPERM},
	{name: "bpf", errno: syscall.EPERM},
	{name: "perf_event_open", errno: syscall.EPERM},
	{name: "userfaultfd", errno: syscall.EPERM},
	{name: "reboot", errno: syscall.EPERM},
	{name: "swapon", errno: syscall.EPERM},
	{name: "swapoff", errno: syscall.EPERM},
	{name: "acct", errno: syscall.EPERM},
	{name: "syslog", errno: syscall.EPERM},
	{name: "quotactl", errno: syscall.EPERM},
	{name: "quotactl_fd", errno: syscall.EPERM},
	{name: "lookup_dcookie", errno: syscall.EPERM},
	{name: "open_by_handle_at", errno: syscall.EPERM},
	{name: "name_to_handle_at", errno: syscall.EPERM},
	{name: "iopl", errno: syscall.EPERM},
	{name: "ioperm", errno: syscall.EPERM},
	{name: "uselib", errno: syscall.EPERM},
	{name: "vhangup", errno: syscall.EPERM},
	{name: "fanotify_init", errno: syscall.EPERM},

	// The clock (adjtimex stays: see the package doc).
	{name: "settimeofday", errno: syscall.EPERM},
	{name: "clock_settime", errno: syscall.EPERM},
	{name: "clock_adjtime", errno: syscall.EPERM},

	// io_uring: its requests bypass seccomp. ENOSYS, as on a kernel
	// without it, so that libuv (Node.js) falls back to its thread pool.
	{name: "io_uring_setup", errno: syscall.ENOSYS},
	{name: "io_uring_enter", errno: syscall.ENOSYS},
	{name: "io_uring_register", errno: syscall.ENOSYS},
}
