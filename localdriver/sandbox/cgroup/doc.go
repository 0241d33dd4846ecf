// Package cgroup puts every process of one function instance (a server
// process and all its children, one job run, one build step) in a control
// group that bounds the memory of all of them together, their number and
// their CPU weight; it reports the kernel's OOM kills and kills the group.
//
// RLIMIT_DATA, which the sandbox sets, bounds each process on its own: ten
// children of a 128 MiB function could hold 3.6 GiB together. A group's
// memory limit holds for its processes together, resident memory and swap
// included: over it the kernel reclaims, then its OOM killer sends SIGKILL
// to one of them. And a group knows every process in it, so a daemonised
// grandchild, in a session of its own, is found and killed with the rest.
//
// # Layout
//
//	<this process's own group>/<Options.Name>/<name of Create>
//
// in each hierarchy in use. Options.Name is the platform's parent group
// ("sless-sb-<8 hex of the data dir>"): New removes the groups a previous run
// with the same Name left (those of a crashed process, killing what still
// runs in them), and Close removes them all and the parent. With
// Options.Sweep New also removes the empty groups of other platforms that
// died (a name with that prefix, no process in it), whose data dirs may be
// gone; a live platform whose empty parent it removed makes it again on
// Create. Processes join
// a group by pid (Add) after they start: the sandbox starts them blocked,
// adds them, then lets them run, so the function's code never runs outside.
//
// # Versions
//
// New uses cgroup v2 when the unified hierarchy has the memory and pids
// controllers for this process's group, and cgroup v1 otherwise (memory and
// pids hierarchies required; cpu and freezer used when mounted, as on a
// hybrid machine whose cgroup2 mount has no controllers). The files:
//
//	                 v2                          v1
//	MemoryBytes      memory.max,                 memory.limit_in_bytes,
//	                 memory.swap.max = 0         memory.memsw.limit_in_bytes (or
//	                                             memory.swappiness = 0 without it)
//	MaxProcs         pids.max                    pids.max
//	CPUWeight        cpu.weight (1..10000)       cpu.shares = weight·1024/100
//	OOMKills         oom_kill of memory.events   oom_kill of memory.oom_control
//	MemoryPeak       memory.peak                 memory.max_usage_in_bytes
//	Kill             cgroup.kill, or             freezer.state, or
//	                 cgroup.freeze               nothing to freeze with
//
// # Where the parent goes on cgroup v2
//
// A v2 group passes controllers to its children only when they are enabled
// in its cgroup.subtree_control, and a group other than the root that does
// so may hold no processes itself ("no internal processes"). This process's
// own group holds at least this process, so New goes through these steps:
//
//  1. When the controllers are, or can be, enabled in its own group (the
//     root group), the parent goes there.
//  2. Else, when its own group holds this process alone (a systemd service
//     with Delegate=yes, a container whose only process is sless), New moves
//     this process into the leaf sless-platform below it, enables the
//     controllers, and makes the parent next to that leaf. The functions
//     then stay within the limits set on the service or container. Close
//     leaves the leaf, where this process lives; a later New finds itself
//     there and uses the group above it.
//  3. Else (the group is shared, as the login session of `sudo sless dev`),
//     the parent goes next to its own group, in the group above, which
//     passes memory and pids on already; nothing is moved.
//
// New never moves a process other than its own: whoever started those
// manages them.
//
// # Kill
//
// With cgroup.kill (Linux 5.14) the kernel kills every process of the group
// at once. Otherwise Kill freezes the group (so that nothing forks while it
// works), sends SIGKILL to every pid in cgroup.procs of the group and of
// any group below it, thaws the group so that the kills take effect, and
// repeats until the group is empty, for at most 10 s. Remove then removes
// the directories, retrying while the kernel still counts exiting processes
// (rmdir fails with EBUSY).
//
// # What the limits do not cover
//
//   - Memory a process used before Add stays charged where it was.
//   - The kernel lets a dying OOM victim charge its last few pages over the
//     limit, so that it can exit: the peak may pass it by a few pages.
//   - MaxProcs counts threads: a Go or Node.js process uses several.
//   - CPUWeight is not applied without a cpu controller.
//
// Making groups needs root, or (v2) a group delegated to this user.
// cgroup imports the standard library, x/sys/unix and domain.
package cgroup
