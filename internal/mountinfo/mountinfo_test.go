package mountinfo

import (
	"reflect"
	"testing"
)

// TestParse reads mount lines with optional fields and an escaped space,
// and leaves out a line without the separator.
func TestParse(t *testing.T) {
	t.Parallel()
	got := Parse([]byte(`25 1 0:22 / /sys/fs/cgroup ro,nosuid shared:9 - tmpfs tmpfs ro,mode=755
31 25 0:27 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
40 1 8:1 /data /tmp/a\040b rw - ext4 /dev/vda rw
garbage line
`))
	want := []Mount{
		{Point: "/sys/fs/cgroup", Root: "/", FSType: "tmpfs", Super: "ro,mode=755"},
		{Point: "/sys/fs/cgroup/cpu,cpuacct", Root: "/", FSType: "cgroup", Super: "rw,cpu,cpuacct"},
		{Point: "/tmp/a b", Root: "/data", FSType: "ext4", Super: "rw"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse = %+v\nwant %+v", got, want)
	}
}
