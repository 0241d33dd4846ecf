package egress

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slessio/sless/domain"
)

// readyTimeout bounds how long slirp4netns may take to bring a link up.
const readyTimeout = 10 * time.Second

// Options configures New.
type Options struct {
	// Allow is the operator's allow-list (ParseAllow), opened to functions.
	Allow []Rule
}

// Network connects sandboxes' network namespaces to the outside. It is safe
// for concurrent use.
type Network struct {
	slirp string
	// enforced: the platform runs as root, so it can write the rules of a
	// sandbox's namespace (see the package doc for the other case).
	enforced bool
	allow    []Rule
}

// New returns a Network after checking that slirp4netns is installed. It is
// EUNAVAILABLE, saying what to install, when it is not.
func New(opts Options) (*Network, error) {
	slirp, err := exec.LookPath("slirp4netns")
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "no network for sandboxes: slirp4netns is not installed (apt-get install slirp4netns): %v", err)
	}
	return &Network{slirp: slirp, enforced: os.Geteuid() == 0, allow: opts.Allow}, nil
}

// Functions returns the policy of function processes and job runs: the
// internet and the operator's allow-list.
func (n *Network) Functions() Policy { return Policy{Internet: true, Allow: n.allow} }

// Enforced reports whether Attach enforces a policy whole. When not (the
// platform is not root), a sandbox gets the internet with the host's loopback
// cut off, but private and link-local ranges stay reachable.
func (n *Network) Enforced() bool { return n.enforced }

// Describe says in a few words what a function can reach, for logs and /readyz.
func (n *Network) Describe() string {
	if !n.enforced {
		return "own network namespace, internet through slirp4netns without the host's loopback; " +
			"private and link-local ranges NOT blocked (run as root for the egress policy)"
	}
	desc := "own network namespace, internet through slirp4netns; blocked: the host's loopback and addresses, private, link-local and reserved ranges"
	if len(n.allow) > 0 {
		open := make([]string, len(n.allow))
		for i, r := range n.allow {
			open[i] = r.String()
		}
		desc += "; allowed: " + strings.Join(open, ", ")
	}
	return desc
}

// Rules returns the rules Attach would write for p, in nft(8) syntax.
func (n *Network) Rules(p Policy) (string, error) {
	hosts, err := hostAddrs()
	if err != nil {
		return "", err
	}
	return rulesFor(p, hosts).String(), nil
}

// Link is a sandbox's connection to the outside: a slirp4netns process.
type Link struct {
	cmd  *exec.Cmd
	exit *os.File // closing it makes slirp4netns exit
	once sync.Once
}

// Attach gives the network namespace of process pid (a sandbox's first
// process, not yet running its program) what p opens: the egress rules
// first, then a link through slirp4netns, waiting until it is up. A policy
// that opens nothing gets nothing: the namespace keeps only its loopback,
// and the Link is nil. Errors are EUNAVAILABLE.
func (n *Network) Attach(pid int, p Policy) (*Link, error) {
	if p.None() {
		return nil, nil
	}
	if n.enforced {
		if err := n.enforce(pid, p); err != nil {
			return nil, domain.Errorf(domain.EUNAVAILABLE, "sandbox network: %v", err)
		}
	}
	if err := waitLoopback(pid); err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "sandbox network: %v", err)
	}
	hostLoopback := n.enforced && slices.ContainsFunc(p.Allow, Rule.HostLoopback)
	l, err := n.link(pid, hostLoopback)
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "sandbox network: %v", err)
	}
	return l, nil
}

// enforce writes the rules of p into pid's network namespace, and lets
// 127.0.0.1 be routed out when p opens ports of the host's loopback.
func (n *Network) enforce(pid int, p Policy) error {
	hosts, err := hostAddrs()
	if err != nil {
		return fmt.Errorf("list this machine's addresses: %w", err)
	}
	rs := rulesFor(p, hosts)
	ns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return err
	}
	defer ns.Close()
	if len(rs.loopback) > 0 {
		// Packets to 127.0.0.1 translated to the gateway keep their
		// loopback source until masqueraded; without route_localnet the
		// kernel drops them as martians.
		err := inNamespace(int(ns.Fd()), func() error {
			return os.WriteFile("/proc/sys/net/ipv4/conf/all/route_localnet", []byte("1"), 0)
		})
		if err != nil {
			return fmt.Errorf("route_localnet: %w", err)
		}
	}
	return install(int(ns.Fd()), rs)
}

// waitLoopback waits until the loopback of pid's namespace is up with
// 127.0.0.1/8 (its broadcast address is then in the routing tables): bwrap
// sets it up while the platform configures the namespace, and slirp4netns
// sets up lo too, so the one that comes second would fail.
func waitLoopback(pid int) error {
	path := "/proc/" + strconv.Itoa(pid) + "/net/fib_trie"
	deadline := time.Now().Add(readyTimeout)
	for {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("the sandbox's routes: %w", err)
		}
		if bytes.Contains(data, []byte("127.255.255.255")) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the sandbox's loopback was not up within %s", readyTimeout)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// link starts slirp4netns for pid's namespace and waits until its tap0 is
// configured. Its gateway leads to the host's loopback only when
// hostLoopback (the rules then let through only the opened ports).
func (n *Network) link(pid int, hostLoopback bool) (*Link, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer readyR.Close()
	exitR, exitW, err := os.Pipe()
	if err != nil {
		readyW.Close()
		return nil, err
	}
	args := []string{"--configure", "--mtu=65520", "--enable-sandbox", "--enable-seccomp", "--ready-fd=3", "--exit-fd=4"}
	if !hostLoopback {
		args = append(args, "--disable-host-loopback")
	}
	cmd := exec.Command(n.slirp, append(args, strconv.Itoa(pid), tapName)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.ExtraFiles = []*os.File{readyW, exitR}
	cmd.SysProcAttr = slirpAttr()
	err = cmd.Start()
	readyW.Close()
	exitR.Close()
	if err != nil {
		exitW.Close()
		return nil, fmt.Errorf("start slirp4netns: %w", err)
	}
	l := &Link{cmd: cmd, exit: exitW}
	_ = readyR.SetReadDeadline(time.Now().Add(readyTimeout))
	var b [1]byte
	if _, err := readyR.Read(b[:]); err != nil {
		l.Close()
		msg := strings.TrimSpace(out.String())
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("slirp4netns was not ready within %s: %s", readyTimeout, msg)
		}
		return nil, fmt.Errorf("slirp4netns failed: %s", msg)
	}
	return l, nil
}

// Close ends the link. It is safe to call more than once and on nil.
func (l *Link) Close() {
	if l == nil {
		return
	}
	l.once.Do(func() {
		// Nothing of slirp4netns's is worth a graceful end: the namespace it
		// served is gone or going.
		_ = l.cmd.Process.Kill()
		_ = l.cmd.Wait()
		l.exit.Close()
	})
}
