// Package localdriver is the embedded default driver of `sless dev` and the
// tests: it builds versions into a data directory and runs functions as
// supervised processes on this machine (HTTP servers on Unix sockets,
// one-shot job runs), each in its tenant's sandbox (package sandbox). It implements the driver.Driver port and passes the
// driver/drivertest conformance suite. It has no Scheduler: the workers'
// leader-only cron enqueuer fires cron slots through Run.
//
// It may import domain, driver (the port) and runtimes: never store, workers,
// pgx or River.
//
// # Builds
//
// Build unpacks a version's zip into Dir/builds/<ns>/<fn>/v<N>.tmp-*/function/,
// installs the runtime wrapper and builds (runtimes.Build: go build with the
// machine's shared GOCACHE, npm ci or npm install --omit=dev when package.json has
// dependencies, pip install --target for a requirements.txt), then renames the directory to v<N> with
// a sless-build.json manifest. Only finished builds have a manifest, so a
// build killed half-way leaves nothing that is used, and building a built
// version again (River delivers at least once) returns the stored result. The
// image is "local:<ns>/<fn>/v<N>"; a later version that reuses a build (a
// configuration change) runs from that directory with its own configuration.
// Builds are per data dir, so a control plane asked to run a version another
// one built (two replicas on one database) builds it first from the stored
// code, through its BuildSource (pull.go), as a node pulls an image it lacks.
// Build errors name no path of the host: a full disk is EUNAVAILABLE
// driver.DiskFullMessage, which the build worker retries and shows.
// A Python function's requirements.txt is installed by pip inside the
// build's sandbox into the version's python-deps folder (runtimes). What
// differs between runtimes (memory knob, SLESS_ENTRYPOINT or a compiled-in
// entrypoint) comes from runtimes.Describe, never from a switch here.
//
// # HTTP functions
//
// Deploy runs one process per function (whatever Replicas > 0 says) in the
// runtime's server mode and returns its endpoint, "unix:" and the path of
// its socket, once /_sless/health answers 200 (cold start: see
// BenchmarkColdStart). The driver makes the socket in Dir/sock (0700, the
// platform's) and hands the process the listening descriptor as fd 3
// (runtimes.EnvListenFD): the process, in a network namespace of its own,
// binds nothing, and only the platform can connect to it. The lifecycle of
// one such instance:
//
//	starting ──healthy──► running ──exit──► backoff ──restart──► running
//	   │                    │                  │
//	   │ exit/timeout       │ stop             │ N exits within the window
//	   ▼                    ▼                  ▼
//	Deploy fails         stopped           crash-looped: Reports.Crashed(ns, fn);
//	(EUNPROCESSABLE,                       Deploy of this version fails
//	 its stderr)                           (EUNPROCESSABLE, last stderr lines)
//
// Restarts get a fresh socket at the same path, after 250 ms doubling up to 30 s; 5 exits within
// 2 minutes are a crash loop. A crash-looped version stays refused until the
// function is scaled to zero or another version is deployed.
//
// Switching versions: the new version starts next to the old one; when it is
// healthy Deploy returns its endpoint and the old process keeps running for
// Options.Drain (10 s by default) before it is stopped, so requests the proxy
// sent to the old endpoint, and those it sends until it learns the new one,
// still finish. If the new version fails to start, the old one keeps serving.
//
// Stopping (Replicas 0, Remove, Close, end of a drain) sends SIGTERM to the
// process group and SIGKILL after Options.StopGrace (5 s).
//
// # Warm pool
//
// With Options.WarmPool = N the driver keeps, for each runtime with a pool
// mode (python3.11 and nodejs20; runtimes.Specialization), N processes
// started before any function needs one: each in a sandbox of its own
// (sandbox.Spec.Unassigned: its network, cgroup, seccomp filter and PID
// namespace made already), listening on a socket of its own, its runtime's
// wrapper imported, waiting on a control socket. Nothing of a tenant is in
// it: its /app is an empty folder of its own (Dir/pool/<pid>-<random>/<n>/app), its
// wrapper is bound read-only at /sless. A cold start whose environment the
// process can take (runtimes.Description.PoolServes: nothing read only at
// an interpreter's start differs, e.g. Node.js's NODE_OPTIONS, and so its
// memory_mb, must be the pool's DefaultMemoryMB) takes one instead of
// starting an interpreter:
//
//  1. the sandbox is given its tenant (sandbox.Cmd.Assign): the tenant's
//     uid in its passwd, the function's memory_mb on its cgroup, RLIMIT_DATA;
//  2. its /app is filled with the version's files (hard links of the
//     build's, which it sees read-only, as it would see the build itself);
//  3. the wrapper is sent the function's folder, environment, uid and gid,
//     switches to them for good before it loads anything (the process ran
//     as host root with only CAP_SETUID and CAP_SETGID, and CAP_SETPCAP for
//     Python, until then; after, it has no capability, and checks so), loads
//     the entrypoint and serves, as a process started for the function would.
//
// A taken process serves that function until it ends; it is never given
// back, and a new one takes its place in the background. Its restarts are
// ordinary processes. What differs from a process started for the
// function: the capability bounding set of a Node.js process still holds
// CAP_SETUID and CAP_SETGID, which JavaScript cannot drop (with no
// capability in any other set and no_new_privs nothing can raise them), the
// process is not dumpable (the kernel's rule after a uid switch: /proc/self
// files are root's), /proc/self/environ holds the pool's environment, not
// the function's, and /sless shows the wrapper. When a pooled process
// cannot be given its function (step 1 or 2 fails) it is killed and a
// process is started as without a pool.
//
// # Secrets
//
// The driver implements driver.SecretOpenerUser. Every process it starts
// for a version that uses secrets — each instance of Deploy and Scale, each
// restart after a crash, a warm-pool process given its function, each Run —
// has them opened anew (driver.OpenSecrets), so a deleted secret version
// starts nothing more: Deploy and Run are EUNPROCESSABLE naming it, and an
// instance whose process then exits is not restarted with the old value
// (it crash-loops, naming it). No value is written to a disk, a log line,
// an error or a command line:
//
//   - secrets (variables) go into the process's environment after the
//     function's env_vars and before the platform's variables, which win;
//     exec passes them to bwrap, which passes them on. A pooled process
//     gets them with the rest of its environment on its control socket.
//   - secret_files are mounted at /run/secrets/<name> when the sandbox is
//     made (sandbox.Spec.SecretFiles: a read-only tmpfs of its own, each
//     content fed to bwrap through a pipe). A warm-pool process's sandbox
//     was made before its function was known and nothing can be mounted
//     into it since, so a version with secret_files does not use the pool.
//     Without a sandbox (ModeNone) there is no file system of the
//     function's own for them, and a version with secret_files does not
//     start (EUNPROCESSABLE, saying it needs the sandbox); secret variables
//     work there as env_vars do.
//
// # No orphans
//
// Every function process leads its own process group: stopping it, and its
// own exit, kill everything it started. On Linux each process also gets
// Pdeathsig SIGKILL, so the functions die with the driver's process even when
// it is killed without Close. (A function that leaves its group with setsid
// escapes both.)
//
// # Limits
//
// timeout_sec is enforced on jobs: the wrapper exits 124 at the deadline, and
// if the process is still there 2 s later its group is killed (a Node.js
// busy loop), reported as ExitCode 124 and TimedOut. HTTP request timeouts are
// the proxy's.
//
// memory_mb bounds all the processes of an instance (or a job run)
// together: the sandbox's cgroup (sandbox.Spec.MemoryBytes). At the limit
// the kernel kills one of them; an instance so killed is restarted and
// reports "out of memory (N MiB)" (ExitReason, which the proxy records in
// the invocation log), a job run says so in its stderr. Files in the
// sandbox's /tmp (a tmpfs) count towards it. As a second line, and the only
// one where no cgroup can be made, each process gets RLIMIT_DATA of
// memory_mb + 256 MiB: the private writable memory it may map (RLIMIT_AS
// would not do: Go reserves over 1 GiB of address space and V8 more,
// without using it); the 256 MiB cover what the runtimes map for
// themselves. Node.js also gets --max-old-space-size=memory_mb, Go
// GOMEMLIMIT=memory_mb MiB (a soft target for its collector) unless the
// function sets it (runtimes.Description.MemoryEnv). Elsewhere than Linux
// memory_mb is not enforced.
//
// # Output
//
// A job's stdout and stderr are returned, the last MaxOutput (1 MiB) bytes of
// each. What a server process prints outside of requests is logged line by
// line (message "function output") and the last 64 KiB of its stderr is kept
// for the messages of failed starts and crash loops.
package localdriver
