// Package seccomp makes the seccomp filter of the local driver's sandbox:
// the system calls a function's processes may not make, even where the
// sandbox's namespaces and missing capabilities already stop most of them.
// The filter is a second wall. Each call below is an entry point into the
// kernel that a tenant has no use for and that has been the way out of a
// container before (new user namespaces, keyrings, io_uring, bpf, ptrace),
// so a kernel bug behind it stays out of reach.
//
// Filter returns the program as bwrap's --seccomp FD reads it (an array of
// struct sock_filter, as seccomp_export_bpf writes). bwrap loads it just
// before it execs the sandbox's program, after building the sandbox, so
// everything the program starts runs under it, and so does any helper
// placed before the function's own program on bwrap's command line. It is
// written with golang.org/x/net/bpf as the assembler; there is no
// libseccomp.
//
// # What the filter does
//
// Like Docker's default profile it allows by default and refuses a list;
// unlike it, it has no capability-dependent entries, since a sandboxed
// process never has a capability that matters.
//
//  1. A call of another architecture's ABI gets ENOSYS, as on a kernel
//     built without it: on x86_64 the 32-bit calls (int 0x80, which
//     seccomp sees as AUDIT_ARCH_I386) and the x32 ABI (numbers with bit
//     30 set); on arm64 AArch32 calls. Their numbers differ, so checking
//     them against the 64-bit list would let them through. ENOSYS rather
//     than a kill: it is what such a program meets on many kernels anyway.
//  2. A call of the list gets its errno and does not run. Where the list
//     looks at an argument (clone's and unshare's flags, ioctl's request)
//     it reads the argument's low 32 bits, all the kernel uses of them
//     (unshare refuses higher bits), so a value cannot hide in the high half.
//  3. Anything else runs. For most calls the answer depends only on the
//     architecture and the number, so the kernel caches it (since Linux
//     5.11) and runs no filter for them at all; only ioctl, clone and
//     unshare, whose answer depends on an argument, run it.
//
// Only amd64 and arm64 are known; Filter returns EUNAVAILABLE elsewhere.
//
// # The list
//
// Every call gets EPERM, as when a process lacks the privilege, except
// where another answer makes programs fall back to what works (ENOSYS).
//
// New namespaces. A new user namespace gives its creator every capability
// inside it and with them kernel code that is otherwise root's (mounting
// file systems, netfilter, more): the largest source of container escapes.
//
//   - unshare with any CLONE_NEW* flag (CLONE_NEWUSER, CLONE_NEWNS,
//     CLONE_NEWNET, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWUTS,
//     CLONE_NEWCGROUP, CLONE_NEWTIME): EPERM. Other flags (CLONE_FILES,
//     CLONE_FS) run.
//   - clone with any of those flags in its first argument: EPERM. fork,
//     vfork and threads, which set none, run.
//   - clone3: ENOSYS. Its flags are in memory, which a filter cannot read.
//     glibc (pthread_create, posix_spawn) falls back to clone on ENOSYS,
//     whose flags the filter reads; Go, Node.js and Python start processes
//     and threads with clone (or with glibc).
//   - setns: EPERM.
//
// So `unshare -r`, `unshare --net` and bwrap fail in a function, and so does
// any program that sandboxes itself with namespaces (Chromium needs
// --no-sandbox, as in Docker).
//
// Mounts: mount, umount2, pivot_root, chroot, and the new mount API
// (move_mount, open_tree, open_tree_attr, fsopen, fsconfig, fsmount, fspick,
// mount_setattr): EPERM. Only the sandbox sets up the file system.
//
// The kernel keyring: keyctl, add_key, request_key: EPERM. Keyrings belong
// to a uid, not to a sandbox: under a platform that is not root, every
// tenant and the platform share one; and the keyring code has a long
// record of kernel bugs.
//
// Other processes: ptrace, process_vm_readv, process_vm_writev, kcmp,
// pidfd_getfd: EPERM. The PID namespace already hides other sandboxes'
// processes; these calls reach into another process's memory or files, a
// frequent place of kernel bugs, and before Linux 4.8 ptrace could change a
// call after the filter had let it pass. (strace and gdb do not work in a
// function.)
//
// The kernel and the machine, all EPERM:
//
//   - modules and kexec: init_module, finit_module, delete_module,
//     kexec_load, kexec_file_load;
//   - bpf, perf_event_open, userfaultfd: large attack surface, and
//     userfaultfd makes kernel races easy to win;
//   - reboot, swapon, swapoff, acct, quotactl, quotactl_fd, vhangup;
//   - syslog: the kernel log holds addresses and other tenants' traces;
//   - lookup_dcookie (gone from new kernels);
//   - open_by_handle_at, name_to_handle_at: a file handle opens a file by
//     inode, past the sandbox's mounts (the "shocker" escape);
//   - iopl, ioperm (x86_64 only): raw I/O ports;
//   - uselib (x86_64 only): an old loader entry point;
//   - fanotify_init: watching whole file systems and mounts (inotify stays,
//     for file watchers).
//
// The terminal: ioctl with TIOCSTI or TIOCLINUX: EPERM. TIOCSTI puts
// characters into the input of the caller's controlling terminal as if
// typed there; a sandbox started from a terminal without a session of its
// own (bwrap --new-session) shares it with the platform, so a function could
// type commands into the shell that ran `sless dev` (CVE-2017-5226; bwrap's
// manual asks for --new-session or this rule). TIOCLINUX does the same
// through a virtual console's selection. Other ioctls run.
//
// The clock: settimeofday, clock_settime, clock_adjtime: EPERM. adjtimex is
// allowed, as Docker allows it: glibc's ntp_gettime and ntp_adjtime, and
// tools reporting whether the clock is synchronised, call it with modes 0
// to read the clock's state, and a filter cannot see modes (they are in
// memory); setting the clock with it needs CAP_SYS_TIME in the host's user
// namespace, which a sandboxed process never has.
//
// io_uring: io_uring_setup, io_uring_enter, io_uring_register: ENOSYS. The
// operations an io_uring carries are not system calls, so no filter sees
// them, and io_uring has been a steady source of kernel bugs. ENOSYS is
// what a kernel without io_uring answers: libuv (Node.js) then uses its
// thread pool.
//
// Denied lists the same calls with their numbers and errnos; a test checks
// that this doc names every one of them.
//
// seccomp imports the standard library, x/sys/unix, x/net/bpf and domain.
package seccomp
