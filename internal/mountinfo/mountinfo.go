// Package mountinfo reads /proc/self/mountinfo, the kernel's list of the
// mounts a process sees (proc(5)). It imports the standard library only.
package mountinfo

import (
	"os"
	"strconv"
	"strings"
)

// Mount is one line of mountinfo.
type Mount struct {
	Point string // where it is mounted
	Root  string // the part of its file system it shows at Point
	// FSType and Super are the file system's type and super options
	// (for a cgroup v1 mount: its controllers among them).
	FSType, Super string
}

// Read returns the mounts this process sees.
func Read() ([]Mount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return Parse(data), nil
}

// Parse reads mountinfo's lines; a malformed line is left out.
func Parse(data []byte) []Mount {
	var mounts []Mount
	for _, line := range strings.Split(string(data), "\n") {
		before, after, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(before), strings.Fields(after)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		mounts = append(mounts, Mount{Point: unescape(f[4]), Root: unescape(f[3]), FSType: g[0], Super: g[2]})
	}
	return mounts
}

// unescape undoes the octal escapes (\040 for a space) of a path.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
