//go:build linux

package egress_test

import (
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver/sandbox/egress"
)

// startProbe starts a probe (see probe) in a network namespace of its own,
// waiting for its go-ahead; run lets it go and returns what it printed per target.
func startProbe(t *testing.T, targets ...string) (pid int, run func() map[string]string) {
	t.Helper()
	return startProbeAs(t, "", targets...)
}

// startProbeAs is startProbe with the probe run as uid (none: root).
func startProbeAs(t *testing.T, uid string, targets ...string) (pid int, run func() map[string]string) {
	t.Helper()
	// Loopback up, as bwrap leaves a sandbox's (Attach waits for it).
	args := []string{"--net", "--", "sh", "-c", `ip link set lo up && exec "$@"`, "probe"}
	if uid != "" {
		args = append(args, "setpriv", "--reuid="+uid, "--regid="+uid, "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--")
	}
	cmd := exec.Command("unshare", append(append(args, os.Args[0]), targets...)...)
	cmd.Env = append(os.Environ(), roleEnv+"="+roleProbe)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// unshare and sh exec the probe in the new namespace: wait until they have.
	for i := 0; ; i++ {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/exe")
		if self, _ := os.Executable(); exe == self {
			break
		}
		if i > 1000 {
			t.Fatalf("the probe did not start")
		}
		time.Sleep(time.Millisecond)
	}
	return cmd.Process.Pid, func() map[string]string {
		_, _ = io.WriteString(stdin, "go\n")
		_ = cmd.Wait()
		got := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			target, result, _ := strings.Cut(line, " ")
			got[target] = result
		}
		return got
	}
}

func TestFunctionsReachTheInternetAndWhatIsAllowedOnly(t *testing.T) {
	needLab(t)
	dbAddr, dbHits := serveHost(t, "127.0.0.1:0", "host database")
	_, dbPort, _ := net.SplitHostPort(dbAddr)
	apiAddr, apiHits := serveHost(t, "127.0.0.1:0", "platform api")
	_, apiPort, _ := net.SplitHostPort(apiAddr)
	ownAddr, ownHits := serveHost(t, labAddr+":0", "platform on the host's address")
	allow, err := egress.ParseAllow("127.0.0.1:" + dbPort + ", " + privateAddr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := egress.New(egress.Options{Allow: allow})
	if err != nil {
		t.Fatal(err)
	}
	w := func(addr string) string { return net.JoinHostPort(addr, worldPort) }
	pid, run := startProbe(t,
		w(publicAddr), w(metadataAddr), w(privateAddr), w(otherPrivate),
		"127.0.0.1:"+dbPort, "10.0.2.2:"+dbPort, "127.0.0.1:"+apiPort, "10.0.2.2:"+apiPort, ownAddr, "10.0.2.3:"+worldPort)
	link, err := n.Attach(pid, n.Functions())
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	got := run()
	for target, want := range map[string]string{
		w(publicAddr):           "ok world " + publicAddr,
		w(privateAddr):          "ok world " + privateAddr, // opened by the allow-list
		"127.0.0.1:" + dbPort:   "ok host database",        // opened: 127.0.0.1 inside is the host's
		"10.0.2.2:" + dbPort:    "ok host database",
		w(metadataAddr):         "refused",
		w(otherPrivate):         "refused",
		"127.0.0.1:" + apiPort:  "refused",
		"10.0.2.2:" + apiPort:   "refused",
		ownAddr:                 "refused",
		"10.0.2.3:" + worldPort: "refused",
	} {
		if !strings.HasPrefix(got[target], want) {
			t.Errorf("%s: got %q, want %s", target, got[target], want)
		}
	}
	hits := takeWorldHits()
	slices.Sort(hits)
	if want := []string{privateAddr, publicAddr}; !slices.Equal(hits, want) {
		t.Errorf("the world was reached at %v; want only %v", hits, want)
	}
	if dbHits() != 2 || apiHits() != 0 || ownHits() != 0 {
		t.Errorf("host services reached: database %d (want 2), api %d, own address %d (want 0)", dbHits(), apiHits(), ownHits())
	}
}

func TestBuildStepsReachTheirPackageIndexOnly(t *testing.T) {
	needLab(t)
	index, indexHits := serveHost(t, "127.0.0.1:0", "package index")
	other, otherHits := serveHost(t, "127.0.0.1:0", "another host service")
	rules, err := egress.URLRules("http://localhost:"+port(index)+"/simple", "direct", "off")
	if err != nil {
		t.Fatal(err)
	}
	n, err := egress.New(egress.Options{Allow: mustParse(t, privateAddr)}) // the functions' list does not apply
	if err != nil {
		t.Fatal(err)
	}
	w := func(addr string) string { return net.JoinHostPort(addr, worldPort) }
	pid, run := startProbe(t, index, other, w(publicAddr), w(privateAddr), w(metadataAddr))
	link, err := n.Attach(pid, egress.Policy{Allow: rules})
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	got := run()
	for target, want := range map[string]string{
		index: "ok package index", other: "refused", w(publicAddr): "refused", w(privateAddr): "refused", w(metadataAddr): "refused",
	} {
		if !strings.HasPrefix(got[target], want) {
			t.Errorf("%s: got %q, want %s", target, got[target], want)
		}
	}
	if hits := takeWorldHits(); len(hits) > 0 {
		t.Errorf("the world was reached at %v", hits)
	}
	if indexHits() != 1 || otherHits() != 0 {
		t.Errorf("index reached %d times (want 1), another host service %d (want 0)", indexHits(), otherHits())
	}
}

func TestNothingOpenMeansNoLink(t *testing.T) {
	needLab(t)
	n, err := egress.New(egress.Options{})
	if err != nil {
		t.Fatal(err)
	}
	host, hostHits := serveHost(t, "127.0.0.1:0", "host")
	w := net.JoinHostPort(publicAddr, worldPort)
	pid, run := startProbe(t, w, host, "10.0.2.2:"+port(host))
	link, err := n.Attach(pid, egress.Policy{})
	if err != nil || link != nil {
		t.Fatalf("Attach of an empty policy = %v, %v; want no link", link, err)
	}
	for target, result := range run() {
		if !strings.HasPrefix(result, "refused") {
			t.Errorf("%s: %s", target, result)
		}
	}
	if hits := takeWorldHits(); len(hits) > 0 || hostHits() > 0 {
		t.Errorf("reached: world %v, host %d", hits, hostHits())
	}
}

func TestSandboxedProcessCannotChangeItsRules(t *testing.T) {
	needLab(t)
	n, err := egress.New(egress.Options{})
	if err != nil {
		t.Fatal(err)
	}
	meta := net.JoinHostPort(metadataAddr, worldPort)
	pid, run := startProbeAs(t, "1000000123", flushRules, meta)
	link, err := n.Attach(pid, n.Functions())
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	got := run()
	if !strings.Contains(got[flushRules], "operation not permitted") {
		t.Errorf("flushing the rules as the tenant: %q, want operation not permitted", got[flushRules])
	}
	if !strings.HasPrefix(got[meta], "refused") {
		t.Errorf("after the attempt, %s: %q, want refused", meta, got[meta])
	}
	if hits := takeWorldHits(); len(hits) > 0 {
		t.Errorf("the world was reached at %v", hits)
	}
}

func TestLinkEndsWithClose(t *testing.T) {
	needLab(t)
	n, err := egress.New(egress.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pid, run := startProbe(t)
	link, err := n.Attach(pid, n.Functions())
	if err != nil {
		t.Fatal(err)
	}
	run()
	before := slirps(t)
	link.Close()
	link.Close() // twice is fine
	if after := slirps(t); after != before-1 {
		t.Errorf("slirp4netns processes: %d before Close, %d after", before, after)
	}
}

// slirps counts the slirp4netns processes of this test.
func slirps(t *testing.T) int {
	t.Helper()
	out, _ := exec.Command("pgrep", "-c", "-P", strconv.Itoa(os.Getpid()), "slirp4netns").Output()
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func mustParse(t *testing.T, s string) []egress.Rule {
	t.Helper()
	r, err := egress.ParseAllow(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseAllow(t *testing.T) {
	for in, want := range map[string]string{
		"10.20.0.0/16":                 "10.20.0.0/16",
		"10.20.1.5":                    "10.20.1.5",
		"10.20.1.5:5432, 127.0.0.1:80": "10.20.1.5:5432 127.0.0.1:80",
		"localhost:5432":               "127.0.0.1:5432",
		"10.20.1.7/16":                 "10.20.0.0/16",
		"":                             "",
	} {
		rules, err := egress.ParseAllow(in)
		if err != nil {
			t.Errorf("ParseAllow(%q): %v", in, err)
			continue
		}
		var got []string
		for _, r := range rules {
			got = append(got, r.String())
		}
		if strings.Join(got, " ") != want {
			t.Errorf("ParseAllow(%q) = %v, want %s", in, got, want)
		}
	}
	for in, why := range map[string]string{
		"127.0.0.1":      "every port of the host's loopback",
		"127.0.0.0/8":    "host's loopback",
		"127.0.0.2:80":   "only 127.0.0.1",
		"0.0.0.0/0":      "every address",
		"10.0.2.3:53":    "sandbox's own network",
		"[::1]:5432":     "IPv6",
		"2001:db8::/32":  "IPv6",
		"10.1.1.1:0":     "bad port",
		"10.1.1.1:99999": "bad port",
		"not an address": "CIDR",
		"10.1.1.1:http":  "bad port",
	} {
		_, err := egress.ParseAllow(in)
		if err == nil || !strings.Contains(err.Error(), why) || domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("ParseAllow(%q) = %v, want an error about %q", in, err, why)
		}
	}
}

// TestALinkLeavesTheHostsMountsAlone: slirp4netns's own sandbox (a mount
// namespace whose old root it detaches) must not unmount what is mounted
// below a shared mount of the host — a kubelet's root folder is one
// (rshared), and its secret volumes (tmpfs) vanished from running pods
// while sandboxes started beside it.
func TestALinkLeavesTheHostsMountsAlone(t *testing.T) {
	needLab(t)
	n, err := egress.New(egress.Options{})
	if err != nil {
		t.Fatal(err)
	}
	shared := t.TempDir()
	volume := shared + "/volume"
	if err := os.Mkdir(volume, 0o755); err != nil {
		t.Fatal(err)
	}
	mustMount := func(src, target, fstype string, flags uintptr) {
		t.Helper()
		if err := syscall.Mount(src, target, fstype, flags, ""); err != nil {
			t.Fatalf("mount %s on %s: %v", src, target, err)
		}
	}
	mustMount(shared, shared, "", syscall.MS_BIND)
	t.Cleanup(func() { _ = syscall.Unmount(shared, syscall.MNT_DETACH) })
	mustMount("", shared, "", syscall.MS_SHARED|syscall.MS_REC)
	mustMount("tmpfs", volume, "tmpfs", 0)
	t.Cleanup(func() { _ = syscall.Unmount(volume, syscall.MNT_DETACH) })
	if err := os.WriteFile(volume+"/key", []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}

	pid, run := startProbe(t)
	link, err := n.Attach(pid, n.Functions())
	if err != nil {
		t.Fatal(err)
	}
	run()
	link.Close()
	if _, err := os.Stat(volume + "/key"); err != nil {
		t.Fatalf("a file on a tmpfs below a shared mount after a link came and went: %v (the tmpfs was unmounted)", err)
	}
}
