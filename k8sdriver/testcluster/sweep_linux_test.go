package testcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestARunThatNeverStoppedIsUndoneByTheNext starts a second cluster, runs a
// pod on its node, then kills every process of it as a crashed test would
// (nothing undone: the shim and the container, their mounts, the bridge
// and the cgroups stay). The next start's sweep must remove all of it.
func TestARunThatNeverStoppedIsUndoneByTheNext(t *testing.T) {
	t.Parallel()
	bins, err := FindBinaries()
	if err != nil {
		if InCI() {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, dir, err := startInNewDir(ctx, bins)
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "left-behind", Namespace: "default"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "c", Image: RuntimeImage("python3.11"), Command: []string{"python", "-c", "import time; time.sleep(600)"}}}}}
	if _, err := c.Client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, "pod running", func(ctx context.Context) error {
		p, err := c.Client.CoreV1().Pods("default").Get(ctx, "left-behind", metav1.GetOptions{})
		if err == nil && p.Status.Phase != corev1.PodRunning {
			err = fmt.Errorf("phase %s", p.Status.Phase)
		}
		return err
	}); err != nil {
		t.Fatalf("%v\n%s", err, c.Describe(ctx, "default"))
	}

	for _, p := range append([]*proc{c.etcd, c.api, c.kcm, c.scheduler}, c.Node.procs()...) {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	c.Node.Registry.close()
	st := c.Node.state
	left := leftovers(st)
	for _, want := range []string{"bridge", "cgroup", "mounts", "processes"} {
		if !strings.Contains(left, want) {
			t.Fatalf("the crashed run left no %s to undo (%s): the test proves nothing", want, left)
		}
	}
	// Only now is the run's owner gone (a cluster another package starts
	// meanwhile may sweep it too: the end is the same).
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	st.PID = gone.Process.Pid
	if err := st.write(); err != nil {
		t.Fatal(err)
	}

	if err := sweepStale(); err != nil {
		t.Fatal(err)
	}
	// The node held the kernel settings as this (living) process: a real
	// crashed run's entry goes with its process.
	if err := machine.release(c.Node.state.user()); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(st); left != "" {
		t.Fatalf("after the sweep: %s", left)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("the run's folder is still there: %v", err)
	}
}

// leftovers describes what of a node is still on the machine.
func leftovers(st nodeState) string {
	var left []string
	if _, err := os.Stat("/sys/class/net/" + st.Bridge); err == nil {
		left = append(left, "bridge "+st.Bridge)
	}
	for _, root := range cgroupHierarchies() {
		if _, err := os.Stat(filepath.Join(root, st.Cgroup)); err == nil {
			left = append(left, "cgroup "+filepath.Join(root, st.Cgroup))
			break
		}
	}
	if mi, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mi), st.Dir+"/") {
		left = append(left, "mounts below "+st.Dir)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); strings.Contains(string(cmd), st.Dir+"/") {
			left = append(left, "processes ("+strings.ReplaceAll(string(cmd), "\x00", " ")+")")
			break
		}
	}
	return strings.Join(left, ", ")
}

// TestKernelSettingsComeBackWhenTheLastNodeStops: two nodes hold the
// settings kubelet changes; the first to stop leaves them, the last one
// writes back what was there before either started. A node whose process
// is gone counts for nothing. (A record of the test's own, over settings
// files of its own: the machine's are not touched.)
func TestKernelSettingsComeBackWhenTheLastNodeStops(t *testing.T) {
	t.Parallel()
	h := hostRecord{dir: t.TempDir(), procSys: t.TempDir()}
	setting := func(k string) string {
		data, err := os.ReadFile(filepath.Join(h.procSys, k))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	set := func(k, v string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(h.procSys, k)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.procSys, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range kubeletSysctls {
		set(k, "0")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	self := strconv.Itoa(os.Getpid())
	a, b, dead := self+"/a", self+"/b", strconv.Itoa(gone.Process.Pid)+"/c"
	for _, u := range []string{a, b, dead} {
		if err := h.hold(u); err != nil {
			t.Fatal(err)
		}
	}
	set("kernel/panic", "10")         // what kubelet does
	if err := h.hold(a); err != nil { // held again: nothing recorded anew
		t.Fatal(err)
	}
	if err := h.release(a); err != nil {
		t.Fatal(err)
	}
	if got := setting("kernel/panic"); got != "10" {
		t.Fatalf("kernel/panic = %s after the first of two nodes stopped, want kubelet's 10 kept", got)
	}
	if err := h.release(b); err != nil { // the dead node's entry goes too
		t.Fatal(err)
	}
	if got := setting("kernel/panic"); got != "0" {
		t.Fatalf("kernel/panic = %s after the last node stopped, want the 0 from before", got)
	}
	set("kernel/panic", "10")
	if err := h.release(b); err != nil { // nothing held: nothing written
		t.Fatal(err)
	}
	if got := setting("kernel/panic"); got != "10" {
		t.Fatalf("a release with no node holding wrote kernel/panic = %s", got)
	}
}
