//go:build linux

package egress_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/nftables"
)

// The lab: every test of this package runs in a network namespace of its own
// (the "host" a sandbox's traffic leaves from), linked by a veth pair to a
// second namespace, the "world", which holds the outside destinations — a fake
// cloud metadata server, a private address, a stand-in for the internet. The
// host's only route leads to the world, so no packet of these tests can leave
// this machine, whatever the policy under test lets through.
const (
	roleEnv   = "SLESS_EGRESS_TEST_ROLE"
	outerEnv  = "SLESS_EGRESS_TEST_OUTER_NETNS" // the namespace the tests were started in
	roleLab   = "lab"
	roleWorld = "world"
	roleProbe = "probe"

	labAddr   = "198.51.100.1" // the host's own address on its link to the world
	worldAddr = "198.51.100.2"
	// In the world (each answers on port 80 with its own address).
	metadataAddr   = "169.254.169.254"
	privateAddr    = "10.77.0.10"  // opened by the allow-list in some tests
	otherPrivate   = "172.20.0.10" // never opened
	publicAddr     = "203.0.113.10"
	worldPort      = "80"
	worldHitPrefix = "hit "
)

// labReady is false when the tests could not be moved into a lab (not root,
// no unshare): the tests that need one skip and say why.
var labReady bool

// labWhy says why there is no lab.
var labWhy string

// world is the world process: its stdout reports every connection it accepted.
var world struct {
	mu   sync.Mutex
	hits []string
	cmd  *exec.Cmd
}

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case roleWorld:
		serveWorld()
		return
	case roleProbe:
		probe()
		return
	case roleLab:
		if err := setUpLab(); err != nil {
			fmt.Fprintf(os.Stderr, "egress test lab: %v\n", err)
			os.Exit(1)
		}
		labReady = true
		code := m.Run()
		_ = world.cmd.Process.Kill()
		_ = world.cmd.Wait()
		os.Exit(code)
	}
	if os.Geteuid() != 0 {
		labWhy = "the lab's network namespaces need root"
		os.Exit(m.Run())
	}
	// Run this same test binary again in a network namespace of its own.
	cmd := exec.Command("unshare", append([]string{"--net", "--", os.Args[0]}, os.Args[1:]...)...)
	outer, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		fmt.Fprintf(os.Stderr, "egress test: %v\n", err)
		os.Exit(1)
	}
	cmd.Env = append(os.Environ(), roleEnv+"="+roleLab, outerEnv+"="+outer)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			os.Exit(exit.ExitCode())
		}
		fmt.Fprintf(os.Stderr, "egress test: run in a network namespace: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// setUpLab runs in the lab's namespace: loopback up, the world started in a
// namespace of its own, the veth pair between them, addresses and routes.
func setUpLab() error {
	self, err := os.Readlink("/proc/self/ns/net")
	if outer := os.Getenv(outerEnv); err != nil || outer == "" || self == outer {
		return fmt.Errorf("not in a network namespace of its own (%s, outside %s, %v)", self, outer, err)
	}
	world.cmd = exec.Command("unshare", "--net", "--", os.Args[0])
	world.cmd.Env = append(os.Environ(), roleEnv+"="+roleWorld)
	world.cmd.Stderr = os.Stderr
	world.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := world.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := world.cmd.Start(); err != nil {
		return err
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "listening" {
		return fmt.Errorf("the world did not start: %q", lines.Text())
	}
	go func() {
		for lines.Scan() {
			if hit, ok := strings.CutPrefix(lines.Text(), worldHitPrefix); ok {
				world.mu.Lock()
				world.hits = append(world.hits, hit)
				world.mu.Unlock()
			}
		}
	}()
	pid := fmt.Sprint(world.cmd.Process.Pid)
	inWorld := func(args ...string) []string {
		return append([]string{"nsenter", "--net=/proc/" + pid + "/ns/net", "ip"}, args...)
	}
	for _, c := range [][]string{
		{"ip", "link", "set", "lo", "up"},
		{"ip", "link", "add", "lab0", "type", "veth", "peer", "name", "world0", "netns", pid},
		{"ip", "addr", "add", labAddr + "/24", "dev", "lab0"},
		{"ip", "link", "set", "lab0", "up"},
		{"ip", "route", "add", "default", "via", worldAddr},
		inWorld("link", "set", "lo", "up"),
		inWorld("addr", "add", worldAddr+"/24", "dev", "world0"),
		inWorld("addr", "add", metadataAddr+"/32", "dev", "world0"),
		inWorld("addr", "add", privateAddr+"/32", "dev", "world0"),
		inWorld("addr", "add", otherPrivate+"/32", "dev", "world0"),
		inWorld("addr", "add", publicAddr+"/32", "dev", "world0"),
		inWorld("link", "set", "world0", "up"),
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, out)
		}
	}
	// The world answers from the host's side before any test runs.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(publicAddr, worldPort), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the world does not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // let that hit be reported before tests count theirs
	takeWorldHits()
	return nil
}

// serveWorld answers every connection on port 80 with the address it was
// made to, and reports it on stdout.
func serveWorld() {
	ln, err := net.Listen("tcp", ":"+worldPort)
	if err != nil {
		fmt.Fprintf(os.Stderr, "world: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("listening")
	var mu sync.Mutex
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(1)
		}
		local := c.LocalAddr().(*net.TCPAddr).IP.String()
		mu.Lock()
		fmt.Println(worldHitPrefix + local)
		mu.Unlock()
		_, _ = io.WriteString(c, "world "+local+"\n")
		c.Close()
	}
}

// takeWorldHits returns the destinations the world was reached at since the
// last call.
func takeWorldHits() []string {
	world.mu.Lock()
	defer world.mu.Unlock()
	hits := world.hits
	world.hits = nil
	return hits
}

// flushRules, as a probe's target, makes it try to remove the namespace's
// nftables rules first.
const flushRules = "flush-rules"

// probe runs in a namespace of its own (a stand-in for a sandbox): it waits
// for a line on stdin (its network is being set up), then connects to each
// host:port of its arguments and prints one line per target: "ok <what the
// server said>" or "refused <error>".
func probe() {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		os.Exit(2)
	}
	for _, target := range os.Args[1:] {
		if target == flushRules {
			c, err := nftables.New()
			if err == nil {
				c.FlushRuleset()
				err = c.Flush()
			}
			fmt.Printf("%s %v\n", target, err)
			continue
		}
		c, err := net.DialTimeout("tcp", target, 3*time.Second)
		if err != nil {
			fmt.Printf("%s refused %v\n", target, errors.Unwrap(err))
			continue
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		fmt.Printf("%s ok %s\n", target, strings.TrimSpace(line))
	}
}

// needLab skips a test that needs the lab, saying why there is none.
func needLab(t *testing.T) {
	t.Helper()
	if !labReady {
		t.Skipf("no lab: %s", labWhy)
	}
}

// serveHost listens on addr of the host (the lab's namespace) and answers
// each connection with name; it returns the address and a count of accepted
// connections.
func serveHost(t *testing.T, addr, name string) (string, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var mu sync.Mutex
	n := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			n++
			mu.Unlock()
			_, _ = io.WriteString(c, name+"\n")
			c.Close()
		}
	}()
	return ln.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}
