package cgroup

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// selfLeaf is the group (v2) New moves this process into when its own group
// must pass controllers on and so may hold no processes (see the package doc).
const selfLeaf = "sless-platform"

// placeV2 chooses and creates the parent group in the unified hierarchy.
func (h *Hierarchy) placeV2(mounts []mount, own ownGroups) error {
	m, base, ok := findV2(mounts, own)
	if !ok {
		return errors.New("no cgroup2 file system shows this process's group")
	}
	if path.Base(base) == selfLeaf && base != m.point {
		base = path.Dir(base) // an earlier New moved this process there
	}
	available, err := h.words(path.Join(base, "cgroup.controllers"))
	if err != nil {
		return err
	}
	for _, c := range []string{"memory", "pids"} {
		if !slices.Contains(available, c) {
			return fmt.Errorf("no %s controller in %s (its parent does not pass it on)", c, base)
		}
	}
	at, err := h.v2ParentOf(m, base)
	if err != nil {
		return err
	}
	if slices.Contains(available, "cpu") {
		_ = h.enable(at, "cpu") // optional: without it CPUWeight is not applied
	}
	dir := path.Join(at, h.name)
	if err := h.mkdirParent(dir); err != nil {
		return err
	}
	used := []string{"memory", "pids"}
	if err := h.enable(dir, used...); err != nil {
		return fmt.Errorf("enable %s in %s: %w%s", strings.Join(used, " and "), dir, err, hint(err))
	}
	if h.enable(dir, "cpu") == nil {
		used = append(used, "cpu")
	}
	h.version, h.parents = 2, []parent{{dir: dir, controllers: used}}
	return nil
}

// v2ParentOf returns the group in which sless's parent is made: base, this
// process's own group, when memory and pids are (or can be) enabled in its
// cgroup.subtree_control; else, when base holds this process only, base
// after moving this process into the leaf selfLeaf below it; else base's
// own parent, which passes memory and pids to base and so to a sibling.
func (h *Hierarchy) v2ParentOf(m mount, base string) (string, error) {
	err := h.enable(base, "memory", "pids")
	if err == nil {
		return base, nil
	}
	if !errors.Is(err, syscall.EBUSY) {
		return "", fmt.Errorf("enable memory and pids in %s: %w%s", base, err, hint(err))
	}
	// "No internal processes": a group other than the root that holds
	// processes cannot pass controllers on.
	procs, err := h.pids(base)
	if err != nil {
		return "", err
	}
	self := h.host.Getpid()
	if len(procs) == 1 && procs[0] == self {
		leaf := path.Join(base, selfLeaf)
		if err := h.moveSelf(leaf); err != nil {
			return "", err
		}
		if err := h.enable(base, "memory", "pids"); err == nil {
			h.moved = leaf
			return base, nil
		}
		_ = h.host.WriteFile(path.Join(base, "cgroup.procs"), strconv.Itoa(self))
		_ = h.host.Rmdir(leaf)
	}
	if base == m.point {
		return "", fmt.Errorf("%s holds other processes than this one and has no parent", base)
	}
	return path.Dir(base), nil
}

// moveSelf moves this process into the group leaf, made if need be.
func (h *Hierarchy) moveSelf(leaf string) error {
	if err := h.host.Mkdir(leaf); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w%s", leaf, err, hint(err))
	}
	if err := h.host.WriteFile(path.Join(leaf, "cgroup.procs"), strconv.Itoa(h.host.Getpid())); err != nil {
		return fmt.Errorf("move this process to %s: %w%s", leaf, err, hint(err))
	}
	return nil
}

// enable enables controllers in dir's cgroup.subtree_control unless they
// are already.
func (h *Hierarchy) enable(dir string, controllers ...string) error {
	file := path.Join(dir, "cgroup.subtree_control")
	enabled, err := h.words(file)
	if err != nil {
		return err
	}
	var add []string
	for _, c := range controllers {
		if !slices.Contains(enabled, c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	return h.host.WriteFile(file, strings.Join(add, " "))
}

// placeV1 chooses and creates the parent groups in the v1 hierarchies.
func (h *Hierarchy) placeV1(mounts []mount, own ownGroups) error {
	for _, c := range []string{"memory", "pids", "cpu", "freezer"} {
		dir, ok := findV1(mounts, own, c)
		if !ok {
			if c == "memory" || c == "pids" {
				return fmt.Errorf("no %s hierarchy mounted", c)
			}
			continue
		}
		dir = path.Join(dir, h.name)
		if i := slices.IndexFunc(h.parents, func(p parent) bool { return p.dir == dir }); i >= 0 {
			h.parents[i].controllers = append(h.parents[i].controllers, c)
		} else {
			h.parents = append(h.parents, parent{dir: dir, controllers: []string{c}})
		}
	}
	for i, p := range h.parents {
		if err := h.mkdirParent(p.dir); err != nil {
			for _, made := range h.parents[:i] {
				_ = h.host.Rmdir(made.dir) // fails, as it should, if a previous run left groups there
			}
			return err
		}
	}
	h.version = 1
	return nil
}

// mkdirParent makes sless's parent group dir unless it exists.
func (h *Hierarchy) mkdirParent(dir string) error {
	if err := h.host.Mkdir(dir); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create %s: %w%s", dir, err, hint(err))
	}
	return nil
}

// hint says what to do about an error of New, if there is a usual cause.
func hint(err error) string {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return " (run as root, or delegate the group to this user)"
	case errors.Is(err, syscall.EROFS):
		return " (the cgroup file system is mounted read-only)"
	}
	return ""
}
