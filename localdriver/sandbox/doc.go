// Package sandbox runs the local driver's function processes — HTTP servers,
// job runs, and the build steps that run user code (npm install, go build,
// the runtime's load check) — inside a bubblewrap (bwrap) sandbox. A function
// is written by a stranger: it must not see another tenant, the platform's
// files, keys, environment or processes.
//
// # What a sandboxed process gets
//
//   - New PID, mount, IPC, UTS and user namespaces (and a cgroup namespace
//     where the kernel allows it); bwrap's --die-with-parent, so the sandbox
//     dies with the platform even after a SIGKILL. When the sandbox's first
//     process exits the kernel kills everything left in its PID namespace: a
//     setsid or daemonised child cannot outlive its function.
//   - A host uid of its tenant's own, never host root. When the platform runs
//     as root, each namespace is given an unprivileged uid (and gid) from
//     Options.UIDBase up, recorded in Dir/uids.json; its processes run as that
//     uid with no capabilities and no_new_privs, so the only host files they
//     can write are that uid's. When the platform runs as a normal user, the
//     user namespace maps to that user: tenants then share the uid and are
//     kept apart by what each sandbox can see.
//   - A read-only root filesystem holding only what runtimes need: /usr (and
//     the /bin, /lib, /sbin links), a short list of /etc files (the dynamic
//     loader's cache, CA certificates, DNS and time zone settings, a generated
//     passwd/group naming the sandbox user), the prefix of each interpreter or
//     tool that lives outside /usr (a pyenv Python, GOROOT), and the
//     directories the caller binds (the version's build read-only at /app; a
//     build's own directory and the tenant's cache home writable). /proc shows
//     the sandbox's own processes only; /dev is a minimal device set; /tmp and
//     /dev/shm are private tmpfs mounts capped at Options.TmpBytes each.
//   - The environment the caller gives, nothing of the platform's.
//   - RLIMIT_NPROC (Options.MaxProcs; it counts threads) and RLIMIT_DATA
//     (Spec.MemoryBytes), set on the sandbox before its program starts: bwrap
//     is started blocked (--block-fd), the limits are applied to its init
//     process (--info-fd names it), then it is let go. As root the process
//     limit is the tenant's, summed over all its sandboxes (the kernel counts a
//     uid's tasks); as a normal user it is per sandbox.
//
// The network is shared with the host: functions call databases and APIs. So
// a function can reach what the host's loopback serves (the platform's own
// API, a database with trust authentication); the platform's own services
// there need credentials the sandbox cannot read.
//
// # Why root mode is built in two steps
//
// bwrap started as an unprivileged uid resolves every bind source, even one
// given as an open file descriptor (--ro-bind-fd), as a path with that uid's
// permissions, so it cannot bind anything below the 0700 data directory. As
// root, the mounts are therefore made by bwrap running privileged (without a
// user namespace), and its program is setpriv(1), which switches to the
// tenant's uid and gid, clears supplementary groups and sets no_new_privs,
// then unshare(1), which enters a new user namespace mapping that uid to
// itself, then the function's program. Both are util-linux tools found at
// New.
//
// # Without a sandbox
//
// New fails (EUNAVAILABLE, with the reason) when no sandbox can be made: no
// bwrap, user namespaces disabled, not Linux. Options.Insecure then runs plain
// processes of the platform's user (ModeNone); `sless dev` does that with a
// loud warning and `sless serve` only with --insecure-no-sandbox.
//
// sandbox imports the standard library, x/sys/unix and domain.
package sandbox
