package cgroup

import (
	"path"
	"slices"
	"strings"

	"github.com/slessio/sless/internal/mountinfo"
)

// mount is one cgroup file system mounted on this machine.
type mount struct {
	point       string   // where it is mounted
	root        string   // the group it shows at point, as /proc/self/cgroup names groups
	v2          bool     // cgroup2, the unified hierarchy
	controllers []string // v1: the controllers of its hierarchy (its super options)
}

// parseMountinfo returns the cgroup mounts listed in /proc/self/mountinfo.
func parseMountinfo(data []byte) []mount {
	var mounts []mount
	for _, mi := range mountinfo.Parse(data) {
		m := mount{point: mi.Point, root: mi.Root}
		switch mi.FSType {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			m.controllers = strings.Split(mi.Super, ",")
		default:
			continue
		}
		mounts = append(mounts, m)
	}
	return mounts
}

// ownGroups is /proc/self/cgroup: this process's group in the unified
// hierarchy and in each v1 controller's.
type ownGroups struct {
	v2 string            // "" when not listed
	v1 map[string]string // controller → group
}

// parseProcCgroup parses /proc/self/cgroup ("4:memory:/a/b", "0::/c").
func parseProcCgroup(data []byte) ownGroups {
	own := ownGroups{v1: map[string]string{}}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		if f[0] == "0" && f[1] == "" {
			own.v2 = f[2]
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			own.v1[c] = f[2]
		}
	}
	return own
}

// dirIn returns the directory of group in mount m, false when m does not
// show it (a mount of another part of the hierarchy).
func dirIn(m mount, group string) (string, bool) {
	// A group outside the cgroup namespace shows as "/../x": not reachable.
	if !strings.HasPrefix(group, "/") || strings.Contains(group+"/", "/../") {
		return "", false
	}
	root, group := path.Clean(m.root), path.Clean(group)
	if root == "/" || root == group {
		return path.Join(m.point, strings.TrimPrefix(group, root)), true
	}
	if rel, ok := strings.CutPrefix(group, root+"/"); ok {
		return path.Join(m.point, rel), true
	}
	return "", false
}

// findV1 returns the directory of this process's group in the v1 hierarchy
// of controller, false when there is none.
func findV1(mounts []mount, own ownGroups, controller string) (string, bool) {
	group, ok := own.v1[controller]
	if !ok {
		return "", false
	}
	for _, m := range mounts {
		if !m.v2 && slices.Contains(m.controllers, controller) {
			if dir, ok := dirIn(m, group); ok {
				return dir, true
			}
		}
	}
	return "", false
}

// findV2 returns the mount of the unified hierarchy that shows this
// process's group and the group's directory, false when there is none.
func findV2(mounts []mount, own ownGroups) (mount, string, bool) {
	for _, m := range mounts {
		if m.v2 {
			if dir, ok := dirIn(m, own.v2); ok {
				return m, dir, true
			}
		}
	}
	return mount{}, "", false
}
