package sandbox_test

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver/sandbox"
)

// TestUnassignedSandbox: a sandbox made before its tenant is known runs as
// host root with only the capabilities it is given (as root), names no
// tenant in its passwd until Assign, then the tenant's uid; Assign is for
// started unassigned sandboxes, once; a capability's name cannot smuggle
// in another setpriv argument.
func TestUnassignedSandbox(t *testing.T) {
	s := newSandbox(t, sandbox.Options{})
	bad := []sandbox.Spec{
		{Unassigned: true, Tenant: tenantA, Path: "/bin/true"},
		{Unassigned: true, Caps: []string{"setuid,+sys_admin"}, Path: "/bin/true"},
	}
	for _, spec := range bad {
		if _, err := s.Command(spec); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("%+v: %v, want EINVALID", spec, err)
		}
	}
	c, err := s.Command(sandbox.Spec{Unassigned: true, Caps: []string{"setuid", "setgid"}, Path: "/bin/sh", Dir: "/",
		Args: []string{"-c", `grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs)' /proc/self/status; grep -c ^sless: /etc/passwd; read x; grep ^sless: /etc/passwd`},
		Env:  []string{"PATH=/usr/bin:/bin"}, MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Assign(tenantA, 0, 0); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("Assign before Start: %v, want EINVALID", err)
	}
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	var out strings.Builder
	for range 5 { // what it said before its tenant was known
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		out.WriteString(line)
	}
	uid, gid, err := c.Assign(tenantA, 128<<20, 256<<20)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Assign(tenantB, 0, 0); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a second Assign: %v, want EINVALID", err)
	}
	_, _ = io.WriteString(stdin, "go\n")
	stdin.Close()
	rest, _ := io.ReadAll(r)
	_ = c.Wait()
	got := out.String() + string(rest)
	if os.Geteuid() != 0 {
		if uid != -1 || gid != -1 {
			t.Errorf("Assign as a normal user = %d, %d; want -1, -1 (the platform's uid already)", uid, gid)
		}
		return
	}
	owner, _, _ := s.Owner(tenantA)
	want := "Uid:\t0\t0\t0\t0\nCapEff:\t00000000000000c0\nCapBnd:\t00000000000000c0\nNoNewPrivs:\t1\n0\n" +
		"sless:x:" + strconv.Itoa(owner) + ":" + strconv.Itoa(owner) + ":"
	if uid != owner || gid != owner || !strings.HasPrefix(got, want) {
		t.Errorf("Assign = %d, %d; the sandbox said\n%s\nwant %d, %d and\n%s", uid, gid, got, owner, owner, want)
	}
}
