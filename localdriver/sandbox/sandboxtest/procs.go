// Package sandboxtest finds the host processes of sandboxed (and plain)
// functions for tests that check what runs and what is left: a sandbox hides
// host paths from a process's command line and working directory, so they
// are found by what their mount namespace binds.
package sandboxtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PIDs returns the processes other than this one running from below dir: a
// plain process by its working directory, executable or command line, a
// sandboxed one by a directory below dir bound into its mount namespace
// (the sandbox's /app).
func PIDs(dir string) []int { return PIDsBut(dir, nil) }

// PIDsBut is PIDs, but a sandboxed process counts only by a bound
// directory that skip (when not nil) does not refuse; skip gets the
// directory's path within its file system. Tests skip the idle warm pool
// of the local driver with it (localdriver.ServesNoFunction).
func PIDsBut(dir string, skip func(source string) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil // not Linux: nothing to check with
	}
	rel := pathInFileSystem(dir)
	own, _ := os.Readlink("/proc/self/ns/mnt")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		base := filepath.Join("/proc", e.Name())
		cwd, _ := os.Readlink(filepath.Join(base, "cwd"))
		exe, _ := os.Readlink(filepath.Join(base, "exe"))
		cmdline, _ := os.ReadFile(filepath.Join(base, "cmdline"))
		if strings.HasPrefix(cwd, dir) || strings.HasPrefix(exe, dir) || strings.Contains(string(cmdline), dir) || bindsFrom(base, own, rel, skip) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Describe returns "pid N (command line)" of each of PIDs(dir).
func Describe(dir string) []string {
	var found []string
	for _, pid := range PIDs(dir) {
		cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
		found = append(found, fmt.Sprintf("pid %d (%s)", pid, strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))))
	}
	return found
}

// bindsFrom reports whether the process at /proc path base lives in a mount
// namespace other than own with a mount whose source is rel or below it,
// from the root field of its mountinfo: the path of a mount's source within
// its file system; sources skip refuses do not count.
func bindsFrom(base, own, rel string, skip func(string) bool) bool {
	theirs, _ := os.Readlink(filepath.Join(base, "ns", "mnt"))
	if theirs == "" || theirs == own {
		return false
	}
	info, _ := os.ReadFile(filepath.Join(base, "mountinfo"))
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) > 4 && (f[3] == rel || strings.HasPrefix(f[3], rel+"/")) && (skip == nil || !skip(f[3])) {
			return true
		}
	}
	return false
}

// pathInFileSystem is dir as mountinfo names it: relative to the root of
// the file system it is on (dir itself when that is mounted at /).
func pathInFileSystem(dir string) string {
	info, _ := os.ReadFile("/proc/self/mountinfo")
	best, root := "", "/"
	for _, line := range strings.Split(string(info), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		if mp := f[4]; (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, root = mp, f[3]
		}
	}
	return filepath.Join(root, strings.TrimPrefix(dir, best))
}
