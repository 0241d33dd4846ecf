package cgroup

import (
	"slices"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
)

// mustOpen is New on the fake.
func mustOpen(t *testing.T, f *fakeCgroup2, name string) *Hierarchy {
	t.Helper()
	h, err := open(f, Options{Name: name})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h
}

func TestFakeCgroup2FileSystem(t *testing.T) {
	t.Parallel()
	const self, name = 100, "sless-0123abcd"
	const service = fakeMount + "/system.slice/sless.service"
	// delegated is a systemd service with Delegate=yes: its group holds
	// sless only, and its parent passes memory, pids and cpu to it.
	delegated := func() *fakeCgroup2 {
		f := newFakeCgroup2(self, "cpu", "io", "memory", "pids")
		f.root.subtree = []string{"cpu", "io", "memory", "pids"}
		f.group(fakeMount + "/system.slice").subtree = []string{"cpu", "memory", "pids"}
		f.group(service).procs = []int{self}
		return f
	}

	t.Run("a delegated group holding only sless", func(t *testing.T) {
		t.Parallel()
		f := delegated()
		h := mustOpen(t, f, name)
		if want := "cgroup v2: memory, pids, cpu at " + service + "/" + name + " (this process moved to " + service + "/sless-platform)"; h.Describe() != want {
			t.Errorf("Describe() = %q, want %q", h.Describe(), want)
		}
		if got := f.where(self).pathOf(); got != "/system.slice/sless.service/sless-platform" {
			t.Errorf("this process is in %s", got)
		}
		g, err := h.Create("fn-1", Limits{MemoryBytes: 128 << 20, MaxProcs: 64, CPUWeight: 50})
		if err != nil {
			t.Fatal(err)
		}
		gdir := service + "/" + name + "/fn-1"
		for _, want := range []string{
			gdir + "/memory.max 134217728", gdir + "/memory.swap.max 0", gdir + "/pids.max 64", gdir + "/cpu.weight 50",
		} {
			if !slices.Contains(f.writes, strings.TrimPrefix(want, fakeMount)) {
				t.Errorf("no write %q in %q", want, f.writes)
			}
		}
		leaf := f.group(service + "/sless-platform")
		leaf.procs = append(leaf.procs, 200, 201) // started by sless, so in its group
		for _, pid := range []int{200, 201} {
			if err := g.Add(pid); err != nil {
				t.Fatal(err)
			}
		}
		if got := f.group(gdir).procs; !slices.Equal(got, []int{200, 201}) {
			t.Errorf("group holds %v after Add", got)
		}
		f.group(gdir).values["memory.events"] = "low 0\nhigh 0\nmax 7\noom 2\noom_kill 2\n"
		if n, err := g.OOMKills(); err != nil || n != 2 {
			t.Errorf("OOMKills() = %d, %v; want 2", n, err)
		}
		if err := g.Remove(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(f.killed, []int{200, 201}) || !slices.Contains(f.writes, strings.TrimPrefix(gdir, fakeMount)+"/cgroup.kill 1") {
			t.Errorf("killed %v with writes %q: want 200 and 201 by cgroup.kill", f.killed, f.writes)
		}
		if f.lookup(gdir) != nil {
			t.Errorf("%s is left after Remove", gdir)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if dirs := f.groupDirs(service); !slices.Equal(dirs, []string{service + "/sless-platform"}) {
			t.Errorf("groups left after Close: %q; want only the one of this process", dirs)
		}

		// A second Hierarchy in the same process finds itself in the leaf.
		h2 := mustOpen(t, f, "sless-other")
		if !strings.HasPrefix(h2.Describe(), "cgroup v2: memory, pids, cpu at "+service+"/sless-other") {
			t.Errorf("Describe() = %q", h2.Describe())
		}
	})

	t.Run("a group shared with other processes", func(t *testing.T) {
		t.Parallel()
		// sudo sless dev in a login session: the scope holds the shell too.
		f := newFakeCgroup2(self, "cpu", "memory", "pids")
		f.root.subtree = []string{"memory", "pids"}
		f.group(fakeMount + "/user.slice").subtree = []string{"memory", "pids"}
		f.group(fakeMount + "/user.slice/session-2.scope").procs = []int{50, self}
		h := mustOpen(t, f, name)
		if want := "cgroup v2: memory, pids at " + fakeMount + "/user.slice/" + name; h.Describe() != want {
			t.Errorf("Describe() = %q, want %q", h.Describe(), want)
		}
		if got := f.where(self).pathOf(); got != "/user.slice/session-2.scope" {
			t.Errorf("this process moved to %s", got)
		}
		if dirs := f.groupDirs(fakeMount + "/user.slice/session-2.scope"); len(dirs) != 0 {
			t.Errorf("groups left in the session: %q", dirs)
		}
		g, err := h.Create("fn", Limits{CPUWeight: 200})
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(f.writes, func(w string) bool { return strings.Contains(w, "cpu.weight") }) {
			t.Errorf("cpu.weight written without a cpu controller: %q", f.writes)
		}
		if err := g.Remove(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("the root group", func(t *testing.T) {
		t.Parallel()
		f := newFakeCgroup2(self, "memory", "pids")
		f.root.procs = []int{1, self}
		h := mustOpen(t, f, name)
		if want := "cgroup v2: memory, pids at " + fakeMount + "/" + name; h.Describe() != want {
			t.Errorf("Describe() = %q, want %q", h.Describe(), want)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		if dirs := f.groupDirs(fakeMount); len(dirs) != 0 {
			t.Errorf("groups left after Close: %q", dirs)
		}
	})

	t.Run("Kill without cgroup.kill", func(t *testing.T) {
		t.Parallel()
		f := delegated()
		f.noKill = true
		h := mustOpen(t, f, name)
		g, err := h.Create("fn", Limits{})
		if err != nil {
			t.Fatal(err)
		}
		gdir := service + "/" + name + "/fn"
		f.group(gdir).procs = []int{300, 301}
		f.group(gdir + "/nested").procs = []int{302}
		if err := g.Kill(); err != nil {
			t.Fatal(err)
		}
		if slices.Sort(f.killed); !slices.Equal(f.killed, []int{300, 301, 302}) {
			t.Errorf("killed %v", f.killed)
		}
		rel := strings.TrimPrefix(gdir, fakeMount)
		freeze, kill, thaw := slices.Index(f.writes, rel+"/cgroup.freeze 1"), slices.Index(f.writes, "kill 300"), slices.Index(f.writes, rel+"/cgroup.freeze 0")
		if freeze < 0 || kill < freeze || thaw < kill {
			t.Errorf("writes %q: want the group frozen, its processes killed, the group thawed", f.writes)
		}
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("what a crashed run left", func(t *testing.T) {
		t.Parallel()
		f := delegated()
		// The previous process (pid 90) is gone; its groups are not.
		f.group(service).subtree = []string{"cpu", "memory", "pids"}
		f.group(service).procs = nil
		f.group(service + "/sless-platform")
		f.group(service + "/" + name).subtree = []string{"memory", "pids"}
		f.group(service + "/" + name + "/fn-1").procs = []int{400, 401}
		f.group(service + "/" + name + "/fn-2")
		f.group(service + "/sless-platform").procs = []int{self} // the new process
		h := mustOpen(t, f, name)
		if !slices.Equal(f.killed, []int{400, 401}) {
			t.Errorf("killed %v, want 400 and 401", f.killed)
		}
		if dirs := f.groupDirs(service + "/" + name); len(dirs) != 0 {
			t.Errorf("groups left by the crashed run: %q", dirs)
		}
		if _, err := h.Create("fn-1", Limits{}); err != nil {
			t.Errorf("Create of the name the crashed run used: %v", err)
		}
	})

	t.Run("unavailable", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			name  string
			setup func(f *fakeCgroup2)
			want  string
		}{
			{"no memory controller", func(f *fakeCgroup2) { // bound to a v1 hierarchy
				f.available = []string{"cpu", "pids"}
				f.root.subtree = f.available
				f.group(fakeMount + "/system.slice").subtree = f.available
			}, "no memory controller in " + service},
			{"memory not passed on", func(f *fakeCgroup2) { f.group(fakeMount + "/system.slice").subtree = []string{"pids"} },
				"no memory controller in " + service},
			{"read-only", func(f *fakeCgroup2) { f.readOnly = true }, "read-only file system"},
			{"not delegated", func(f *fakeCgroup2) { f.denied = true }, "run as root, or delegate"},
		} {
			f := delegated()
			c.setup(f)
			_, err := open(f, Options{Name: name})
			if domain.ErrorCode(err) != domain.EUNAVAILABLE || !strings.Contains(domain.ErrorMessage(err), c.want) {
				t.Errorf("%s: New = %v, want %s with %q", c.name, err, domain.EUNAVAILABLE, c.want)
			}
		}
	})
}
