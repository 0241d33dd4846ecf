package cgroup

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// fakeMount is where the fake cgroup2 file system is mounted.
const fakeMount = "/sys/fs/cgroup"

// fakeCgroup2 is a fake of a cgroup2 file system, in memory, for the v2 code:
// cgroup2 controllers cannot be enabled on a machine whose memory and pids
// controllers are bound to v1 hierarchies, such as the one these tests were
// written on. It keeps the kernel's rules the package depends on: a group's
// controllers are those its parent's cgroup.subtree_control enables, and
// only those controllers' files exist in it; no internal processes (a group
// other than the root cannot both hold processes and enable controllers for
// its children: EBUSY); rmdir of a populated group fails with EBUSY;
// cgroup.kill kills the group's processes and those of the groups below.
type fakeCgroup2 struct {
	mu        sync.Mutex
	root      *fakeNode
	available []string // the root's controllers
	self      int
	readOnly  bool // mounted read-only: EROFS
	denied    bool // not root, nothing delegated: EACCES
	noKill    bool // a kernel before 5.14: no cgroup.kill
	killed    []int
	writes    []string // "file value", in order
}

// fakeNode is one group.
type fakeNode struct {
	name     string
	parent   *fakeNode
	children map[string]*fakeNode
	procs    []int
	subtree  []string
	values   map[string]string // the files written
	frozen   bool
}

// controllerFiles are the files of each controller the fake knows, with
// the values they start with.
var controllerFiles = map[string]string{
	"memory.max":      "max",
	"memory.swap.max": "max",
	"memory.events":   "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n",
	"memory.peak":     "0",
	"pids.max":        "max",
	"cpu.weight":      "100",
}

func newFakeCgroup2(self int, available ...string) *fakeCgroup2 {
	return &fakeCgroup2{root: &fakeNode{children: map[string]*fakeNode{}}, available: available, self: self}
}

// group makes the groups of dir that do not exist and returns dir's, for
// setting up a machine's tree.
func (f *fakeCgroup2) group(dir string) *fakeNode {
	n := f.root
	for _, name := range strings.Split(strings.Trim(strings.TrimPrefix(dir, fakeMount), "/"), "/") {
		if name == "" {
			continue
		}
		if n.children[name] == nil {
			n.children[name] = &fakeNode{name: name, parent: n, children: map[string]*fakeNode{}}
		}
		n = n.children[name]
	}
	return n
}

// lookup returns the group of dir, nil if there is none.
func (f *fakeCgroup2) lookup(dir string) *fakeNode {
	rel, ok := strings.CutPrefix(path.Clean(dir), fakeMount)
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return nil
	}
	n := f.root
	for _, name := range strings.Split(strings.Trim(rel, "/"), "/") {
		if name != "" {
			if n = n.children[name]; n == nil {
				return nil
			}
		}
	}
	return n
}

// pathOf returns the group's path as /proc/self/cgroup shows it.
func (n *fakeNode) pathOf() string {
	if n.parent == nil {
		return "/"
	}
	return path.Join(n.parent.pathOf(), n.name)
}

func (f *fakeCgroup2) controllers(n *fakeNode) []string {
	if n.parent == nil {
		return f.available
	}
	return n.parent.subtree
}

// where returns the group holding pid, nil if none.
func (f *fakeCgroup2) where(pid int) *fakeNode {
	var found *fakeNode
	var walk func(n *fakeNode)
	walk = func(n *fakeNode) {
		if slices.Contains(n.procs, pid) {
			found = n
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(f.root)
	return found
}

// exists reports whether group n has the interface file name.
func (f *fakeCgroup2) exists(n *fakeNode, name string) bool {
	switch name {
	case "cgroup.procs", "cgroup.controllers", "cgroup.subtree_control":
		return true
	case "cgroup.events", "cgroup.freeze":
		return n.parent != nil
	case "cgroup.kill":
		return n.parent != nil && !f.noKill
	}
	controller, _, _ := strings.Cut(name, ".")
	_, known := controllerFiles[name]
	return known && n.parent != nil && slices.Contains(f.controllers(n), controller)
}

// file splits name into its group and file, with the error of a missing one.
func (f *fakeCgroup2) file(op, name string) (*fakeNode, string, error) {
	n := f.lookup(path.Dir(name))
	if n == nil || !f.exists(n, path.Base(name)) {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: syscall.ENOENT}
	}
	return n, path.Base(name), nil
}

func (f *fakeCgroup2) ReadFile(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch name {
	case "/proc/self/mountinfo":
		return []byte("22 1 0:21 / /proc rw,nosuid - proc proc rw\n" +
			"30 22 0:26 / " + fakeMount + " rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"), nil
	case "/proc/self/cgroup":
		return []byte("0::" + f.where(f.self).pathOf() + "\n"), nil
	}
	n, file, err := f.file("open", name)
	if err != nil {
		return nil, err
	}
	switch file {
	case "cgroup.procs":
		var lines []string
		for _, pid := range n.procs {
			lines = append(lines, strconv.Itoa(pid)+"\n")
		}
		return []byte(strings.Join(lines, "")), nil
	case "cgroup.controllers":
		return []byte(strings.Join(f.controllers(n), " ") + "\n"), nil
	case "cgroup.subtree_control":
		return []byte(strings.Join(n.subtree, " ") + "\n"), nil
	case "cgroup.events":
		populated, frozen := 0, 0
		if len(n.procs) > 0 {
			populated = 1
		}
		if n.frozen {
			frozen = 1
		}
		return []byte(fmt.Sprintf("populated %d\nfrozen %d\n", populated, frozen)), nil
	}
	if v, ok := n.values[file]; ok {
		return []byte(v), nil
	}
	return []byte(controllerFiles[file]), nil
}

func (f *fakeCgroup2) WriteFile(name, data string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, file, err := f.file("open", name)
	if err != nil {
		return err
	}
	switch {
	case f.readOnly:
		return &fs.PathError{Op: "open", Path: name, Err: syscall.EROFS}
	case f.denied:
		return &fs.PathError{Op: "open", Path: name, Err: syscall.EACCES}
	}
	fail := func(errno syscall.Errno) error { return &fs.PathError{Op: "write", Path: name, Err: errno} }
	switch file {
	case "cgroup.procs":
		pid, err := strconv.Atoi(data)
		if err != nil || f.where(pid) == nil {
			return fail(syscall.ESRCH)
		}
		if n.parent != nil && len(n.subtree) > 0 {
			return fail(syscall.EBUSY)
		}
		from := f.where(pid)
		from.procs = slices.DeleteFunc(from.procs, func(p int) bool { return p == pid })
		n.procs = append(n.procs, pid)
	case "cgroup.subtree_control":
		for _, token := range strings.Fields(data) {
			c := token[1:]
			if !slices.Contains(f.controllers(n), c) {
				return fail(syscall.ENOENT)
			}
			if token[0] == '+' && !slices.Contains(n.subtree, c) {
				if n.parent != nil && len(n.procs) > 0 {
					return fail(syscall.EBUSY)
				}
				n.subtree = append(n.subtree, c)
			}
		}
	case "cgroup.kill":
		var kill func(n *fakeNode)
		kill = func(n *fakeNode) {
			f.killed = append(f.killed, n.procs...)
			n.procs = nil
			for _, c := range n.children {
				kill(c)
			}
		}
		kill(n)
	case "cgroup.freeze":
		n.frozen = data == "1"
	case "cgroup.controllers", "cgroup.events":
		return fail(syscall.EINVAL)
	default:
		if n.values == nil {
			n.values = map[string]string{}
		}
		n.values[file] = data
	}
	f.writes = append(f.writes, strings.TrimPrefix(name, fakeMount)+" "+data)
	return nil
}

func (f *fakeCgroup2) Mkdir(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	parent := f.lookup(path.Dir(name))
	switch {
	case parent == nil:
		return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.ENOENT}
	case f.readOnly:
		return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.EROFS}
	case f.denied:
		return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.EACCES}
	case parent.children[path.Base(name)] != nil || f.exists(parent, path.Base(name)):
		return &fs.PathError{Op: "mkdir", Path: name, Err: syscall.EEXIST}
	}
	f.group(name)
	return nil
}

func (f *fakeCgroup2) Rmdir(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.lookup(name)
	switch {
	case n == nil:
		return &fs.PathError{Op: "rmdir", Path: name, Err: syscall.ENOENT}
	case len(n.procs) > 0 || len(n.children) > 0:
		return &fs.PathError{Op: "rmdir", Path: name, Err: syscall.EBUSY}
	}
	delete(n.parent.children, n.name)
	return nil
}

// Made says every group was made long ago: the fake's sweeps take all.
func (f *fakeCgroup2) Made(string) (time.Time, error) { return time.Time{}, nil }

func (f *fakeCgroup2) Subdirs(name string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.lookup(name)
	if n == nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: syscall.ENOENT}
	}
	var names []string
	for name := range n.children {
		names = append(names, name)
	}
	sort.Strings(names)
	return names, nil
}

func (f *fakeCgroup2) Kill(pid int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.where(pid)
	if n == nil {
		return syscall.ESRCH
	}
	n.procs = slices.DeleteFunc(n.procs, func(p int) bool { return p == pid })
	f.killed = append(f.killed, pid)
	f.writes = append(f.writes, "kill "+strconv.Itoa(pid))
	return nil
}

func (f *fakeCgroup2) Getpid() int { return f.self }

// groupDirs returns the directories of the fake's groups below dir.
func (f *fakeCgroup2) groupDirs(dir string) []string {
	var dirs []string
	var walk func(n *fakeNode)
	walk = func(n *fakeNode) {
		for _, c := range n.children {
			dirs = append(dirs, path.Join(fakeMount, c.pathOf()))
			walk(c)
		}
	}
	if n := f.lookup(dir); n != nil {
		walk(n)
	}
	sort.Strings(dirs)
	return dirs
}
