package testcluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	if err := releaseSysctls(c.Node.state.user()); err != nil {
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
// writes back what was there before either started.
func TestKernelSettingsComeBackWhenTheLastNodeStops(t *testing.T) {
	t.Parallel()
	const key = "kernel/panic"
	before, err := os.ReadFile("/proc/sys/" + key)
	if err != nil {
		t.Skip(err)
	}
	a, b := nodeState{PID: os.Getpid(), Bridge: "test-a-" + randomHex(3)}, nodeState{PID: os.Getpid(), Bridge: "test-b-" + randomHex(3)}
	for _, s := range []nodeState{a, b} {
		if err := holdSysctls(s.user()); err != nil {
			t.Fatal(err)
		}
	}
	// What kubelet does; another node of this machine may have done it already.
	if err := os.WriteFile("/proc/sys/"+key, []byte("10"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := releaseSysctls(a.user()); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.ReadFile("/proc/sys/" + key); strings.TrimSpace(string(now)) != "10" {
		t.Fatalf("%s = %s after the first of two nodes stopped, want kubelet's 10 kept", key, now)
	}
	if err := releaseSysctls(b.user()); err != nil {
		t.Fatal(err)
	}
	r := readSysctlRecord(t)
	if len(r.Users) > 0 {
		return // nodes of other tests run: they restore when the last stops
	}
	if now, _ := os.ReadFile("/proc/sys/" + key); string(now) != string(before) {
		t.Fatalf("%s = %s after the last node stopped, want %s", key, now, before)
	}
}

func readSysctlRecord(t *testing.T) sysctlRecord {
	var r sysctlRecord
	if err := withHostLock(func(cur *sysctlRecord) error { r = *cur; return nil }); err != nil {
		t.Fatal(err)
	}
	return r
}
