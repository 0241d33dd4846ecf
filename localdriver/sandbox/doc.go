// Package sandbox runs the local driver's function processes — HTTP servers,
// job runs, and the build steps that run user code (npm install, go build,
// the runtime's load check) — inside a bubblewrap (bwrap) sandbox. A function
// is written by a stranger: it must not see or reach another tenant, the
// platform's files, keys, environment, processes or ports, nor a service of
// the host that the operator did not open to it.
//
// # What a sandboxed process gets
//
//   - New PID, mount, IPC, UTS and network namespaces (and a cgroup namespace
//     where the kernel allows it; a user namespace too when the platform is
//     not root), a session of its own (no typing into the platform's
//     terminal); bwrap's --die-with-parent, so the sandbox dies with the
//     platform even after a SIGKILL. When the sandbox's first process exits
//     the kernel kills everything left in its PID namespace: a setsid or
//     daemonised child cannot outlive its function.
//   - A host uid of its tenant's own, never host root. When the platform runs
//     as root, each namespace is given an unprivileged uid (and gid) from the
//     Dir's own range of UIDsPerDir uids, which the host-wide registry
//     (Options.Registry, /var/lib/sless/uid-ranges.json) hands out, so that
//     two platforms on one machine never give two tenants the same uid; the
//     uids are recorded in Dir/uids.json. Its processes run as that uid with
//     no capabilities (bounding set empty) and no_new_privs, so the only
//     host files they can write are that uid's. When the platform runs as a
//     normal user, the user namespace maps to that user: tenants then share
//     the uid and are kept apart by what each sandbox can see.
//   - A seccomp filter (package seccomp, like Docker's default profile): no
//     new namespaces (no nested user namespace: `unshare -r` fails), no
//     mounts, keyrings, ptrace, kernel modules, bpf, perf events or io_uring.
//   - A network of its own (package egress): only its own loopback, and —
//     as Spec.Network says — a link through slirp4netns under the egress
//     policy: functions reach the internet and what the operator opened,
//     never the host's loopback or addresses, private, link-local or
//     reserved ranges; build steps reach their package index only; the
//     entrypoint check reaches nothing. The platform reaches a server
//     through a listening Unix socket it passes in (Spec.ExtraFiles), so no
//     port is opened anywhere. resolv.conf names slirp4netns's DNS
//     forwarder; hosts names only localhost.
//   - A read-only root filesystem holding only what runtimes need: /usr (and
//     the /bin, /lib, /sbin links), a short list of /etc files (the dynamic
//     loader's cache, CA certificates, time zone settings, a generated
//     passwd/group naming the sandbox user), the prefix of each interpreter or
//     tool that lives outside /usr (a pyenv Python, GOROOT), and the
//     directories the caller binds (the version's build read-only at /app; a
//     build's own directory and the tenant's cache home writable). /proc shows
//     the sandbox's own processes only; /dev is a minimal device set; /tmp and
//     /dev/shm are private tmpfs mounts capped at Options.TmpBytes each.
//   - The environment the caller gives, nothing of the platform's.
//   - Limits. A cgroup per sandbox (package cgroup; v2 where delegated, v1's
//     memory and pids controllers otherwise) holds Spec.MemoryBytes for all
//     its processes together — the kernel's OOM killer ends one of them at
//     the limit, and Cmd.OOMKilled says so — and its processes and threads
//     (Spec.MaxProcs, else Options.MaxProcs). Without a cgroup (a normal
//     user without a delegated subtree: CgroupsWhy says why) only the
//     second line holds: RLIMIT_NPROC (Options.MaxProcs; it counts threads,
//     as root of the whole tenant, summed over its sandboxes) and
//     RLIMIT_DATA (Spec.DataBytes) per process. All of them are set on the
//     sandbox before its program starts: bwrap is started blocked
//     (--block-fd), the limits, the cgroup and the network are given to its
//     init process (--info-fd names it), then it is let go.
//
// # Why root mode is built in two steps
//
// bwrap started as an unprivileged uid resolves every bind source, even one
// given as an open file descriptor (--ro-bind-fd), as a path with that uid's
// permissions, so it cannot bind anything below the 0700 data directory. As
// root, the mounts are therefore made by bwrap running privileged (without a
// user namespace: the namespaces it makes belong to the host's, where the
// tenant has no capability), and its program is setpriv(1), which switches
// to the tenant's uid and gid, clears supplementary groups, the inheritable
// and bounding capability sets, and sets no_new_privs, then runs the
// function's program. The seccomp filter is loaded by bwrap just before
// setpriv runs; setpriv needs none of what it refuses.
//
// # Sandboxes made before their tenant is known
//
// A warm pool starts processes before it knows whose they will be
// (Spec.Unassigned). As root such a sandbox is made as any other, but
// setpriv keeps host uid 0 and only the capabilities the program needs to
// switch itself to a tenant's uid (Spec.Caps: CAP_SETUID, CAP_SETGID),
// clears the inheritable set and groups and sets no_new_privs; its passwd
// and group files are its own, naming no tenant, and its memory limit the
// pool's. Cmd.Assign then gives it its tenant before the program runs any
// of the tenant's code: the passwd names the tenant's uid, the cgroup gets
// the function's memory limit and every process RLIMIT_DATA, and the
// program is told the uid and gid to switch to; a uid switch from root
// clears its permitted and effective sets for good. As a normal user the
// program runs as the platform's uid without capabilities from the start,
// as every sandbox does, and Assign only sets the limits.
//
// # Secret files
//
// Spec.SecretFiles are mounted at /run/secrets/<name> with values that never
// touch a disk nor a command line: bwrap mounts a small tmpfs there
// (--tmpfs), reads each content from a pipe of its own (--ro-bind-data FD,
// a descriptor after its own; the platform writes into the pipe), copies it
// into its own tmpfs, bind-mounts it read-only and closes the descriptor;
// then the folder is remounted read-only (--remount-ro). The program can
// read them and change nothing: no write, chmod or new file. As a normal
// user the files are the program's own, 0400 in a 0500 folder. As root
// bwrap makes them root's and has no way to give them to the tenant (a
// gid for bwrap itself would break the limits it is given before it runs
// its program, which need its ids to be the platform's), so they are 0444
// in a 0555 folder: the sandbox's mount namespace is its own, and its only
// processes run as the tenant's uid, so that uid (and host root) are the
// only readers. Neither ModeNone (no file system of the process's own) nor
// an Unassigned sandbox (made before its tenant's secrets are known) takes
// any.
//
// # Without a sandbox
//
// New fails (EUNAVAILABLE, with the reason) when no sandbox can be made: no
// bwrap or slirp4netns, user namespaces disabled, not Linux. Options.Insecure
// then runs plain processes of the platform's user (ModeNone); `sless dev`
// does that with a loud warning and `sless serve` only with
// --insecure-no-sandbox.
//
// sandbox imports the standard library, x/sys/unix, domain and its own
// subpackages (cgroup, egress, seccomp).
package sandbox
