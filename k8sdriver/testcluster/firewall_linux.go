package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// firewallLock is held machine-wide while a node's kube-router runs: its
// iptables chains and ipsets are the machine's, one set for everyone.
var firewallLock = filepath.Join(machine.dir, "kube-router.lock")

// EnforceNetworkPolicy makes the node enforce NetworkPolicy, which Debian's
// bridge plugin does not: kube-router's firewall (no routing, no service
// proxy) turns the cluster's policies into iptables rules and ipsets on this
// machine. It runs until the cluster stops, which removes its rules
// (cleanupFirewall), as the next start does after a run that never stopped. Only one node of the machine runs it at a time: a second
// waits for the first cluster to stop.
func (c *Cluster) EnforceNetworkPolicy(t testing.TB) {
	t.Helper()
	c.firewallOnce.Do(func() { c.firewallErr = c.startFirewall() })
	if c.firewallErr != nil {
		t.Fatalf("testcluster: NetworkPolicy enforcement: %v", c.firewallErr)
	}
}

func (c *Cluster) startFirewall() error {
	if err := os.MkdirAll(machine.dir, 0o700); err != nil {
		return err
	}
	lock, err := os.OpenFile(firewallLock, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		return err
	}
	c.firewallHeld = lock // closed (unlocked) by stopFirewall
	c.Node.state.Firewall = true
	if err := c.Node.state.write(); err != nil {
		return err
	}
	c.firewall, err = startProc("kube-router", c.dir, c.bins.KubeRouter,
		"--kubeconfig="+filepath.Join(c.dir, "kcm.kubeconfig"), "--hostname-override="+NodeName,
		"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--enable-cni=false",
		"--enable-ipv6=false", "--health-port=0", "--metrics-port=0",
		"--service-cluster-ip-range=10.0.0.0/24", "--iptables-sync-period=5s", "--v=1")
	if err != nil {
		return err
	}
	// Its first sync has made the chain every pod's traffic passes.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return waitFor(ctx, "kube-router's first sync", func(context.Context) error {
		out, err := exec.Command("iptables", "-S", "KUBE-ROUTER-FORWARD").CombinedOutput()
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}, c.firewall)
}

// stopFirewall ends kube-router and removes its rules and ipsets.
func (c *Cluster) stopFirewall() error {
	if c.firewall == nil {
		return nil
	}
	c.firewall.stop(10 * time.Second)
	err := cleanupFirewall()
	if c.firewallHeld != nil {
		c.firewallHeld.Close()
	}
	return err
}

// kube-router's own chains and ipsets, by the prefixes of their names.
var (
	firewallChains = []string{"KUBE-ROUTER-", "KUBE-NWPLCY-", "KUBE-POD-FW-"}
	firewallSets   = []string{"KUBE-SRC-", "KUBE-DST-", "kube-router-"}
)

// cleanupFirewall removes what kube-router made on the machine: the rules
// that jump to its chains, the chains, then its ipsets. (Its own
// --cleanup-config, v2.1.0, panics in the service proxy's part and leaves
// the firewall's chains behind.)
func cleanupFirewall() error {
	var errs []error
	for _, table := range []string{"filter", "nat", "mangle"} {
		out, err := exec.Command("iptables-save", "-t", table).Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("iptables-save -t %s: %w", table, err))
			continue
		}
		var jumps, chains []string
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			switch {
			case len(f) > 0 && strings.HasPrefix(f[0], ":") && hasPrefix(strings.TrimPrefix(f[0], ":"), firewallChains):
				chains = append(chains, strings.TrimPrefix(f[0], ":"))
			case len(f) > 2 && f[0] == "-A" && !hasPrefix(f[1], firewallChains) && slices.ContainsFunc(f, func(w string) bool { return hasPrefix(w, firewallChains) }):
				jumps = append(jumps, "-D"+strings.TrimPrefix(line, "-A"))
			}
		}
		if len(chains) == 0 && len(jumps) == 0 {
			continue
		}
		script := "*" + table + "\n" + strings.Join(jumps, "\n") + "\n"
		for _, ch := range chains {
			script += "-F " + ch + "\n"
		}
		for _, ch := range chains {
			script += "-X " + ch + "\n"
		}
		restore := exec.Command("iptables-restore", "--noflush")
		restore.Stdin = strings.NewReader(script + "COMMIT\n")
		if out, err := restore.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("remove kube-router's rules from %s: %v: %s", table, err, out))
		}
	}
	sets, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("ipset list: %w", err))...)
	}
	for _, set := range strings.Fields(string(sets)) {
		if hasPrefix(set, firewallSets) {
			if out, err := exec.Command("ipset", "destroy", set).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("ipset destroy %s: %v: %s", set, err, out))
			}
		}
	}
	return errors.Join(errs...)
}

func hasPrefix(s string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(s, p) })
}
