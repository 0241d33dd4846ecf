package cgroup

import "testing"

func TestFindsOwnGroupsInMountinfo(t *testing.T) {
	t.Parallel()
	// A hybrid machine, and a v1 container whose cgroup mounts show its own
	// group only (their root is /docker/abc).
	mounts := parseMountinfo([]byte(`25 1 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate
27 25 0:24 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
28 25 0:25 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
29 25 0:26 /docker/abc /sys/fs/cgroup/pids rw,nosuid - cgroup cgroup rw,pids
30 25 0:27 /docker/abc /mnt/free\040zer rw,nosuid - cgroup cgroup rw,freezer
`))
	own := parseProcCgroup([]byte(`12:pids:/docker/abc/inner
11:freezer:/docker/abd
4:memory:/process_api/x
2:cpu,cpuacct:/
0::/
`))
	for _, c := range []struct{ controller, dir string }{
		{"memory", "/sys/fs/cgroup/memory/process_api/x"},
		{"cpu", "/sys/fs/cgroup/cpu,cpuacct"},
		{"cpuacct", "/sys/fs/cgroup/cpu,cpuacct"},
		{"pids", "/sys/fs/cgroup/pids/inner"},
		{"freezer", ""}, // /docker/abd is not below the mount's root
		{"blkio", ""},
	} {
		if dir, _ := findV1(mounts, own, c.controller); dir != c.dir {
			t.Errorf("%s at %q, want %q", c.controller, dir, c.dir)
		}
	}
	if _, dir, ok := findV2(mounts, own); !ok || dir != "/sys/fs/cgroup/unified" {
		t.Errorf("v2 at %q, %v", dir, ok)
	}
	if _, _, ok := findV2(mounts, parseProcCgroup([]byte("0::/../outside\n"))); ok {
		t.Error("a group outside the cgroup namespace is found")
	}
	if m := mounts[len(mounts)-1]; m.point != "/mnt/free zer" {
		t.Errorf("mount point %q", m.point)
	}
}
