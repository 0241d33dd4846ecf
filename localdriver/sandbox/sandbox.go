package sandbox

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver/sandbox/cgroup"
	"github.com/slessio/sless/localdriver/sandbox/egress"
	"github.com/slessio/sless/localdriver/sandbox/seccomp"
)

// Mode is how function processes are isolated.
type Mode string

// The modes of a Sandbox.
const (
	// ModeBubblewrap runs every process in a bwrap sandbox (see the package doc).
	ModeBubblewrap Mode = "bubblewrap"
	// ModeNone runs plain processes of the platform's user: insecure, for a
	// laptop without bubblewrap.
	ModeNone Mode = "none"
)

// Defaults of Options.
const (
	// DefaultUIDBase is the first host uid given to a tenant when the
	// platform runs as root: far above the ranges of system and human users
	// and of the usual /etc/subuid ranges (100000 + 65536·n).
	DefaultUIDBase = 1_000_000_000
	// DefaultMaxProcs bounds the processes and threads (RLIMIT_NPROC).
	DefaultMaxProcs = 4096
	// DefaultTmpBytes caps the private /tmp and /dev/shm of a sandbox, each.
	DefaultTmpBytes = 128 << 20
)

// HomeDir is where a Spec with Home sees its tenant's persistent home.
const HomeDir = "/home/sless"

// Options configures New.
type Options struct {
	// Dir keeps the sandbox's state: its uid range (uid-range), the tenants'
	// uids (uids.json), their passwd/group files and their homes. Required.
	Dir string
	// Insecure selects ModeNone: no sandbox at all.
	Insecure bool
	// UIDBase is the lowest tenant uid when running as root (DefaultUIDBase).
	UIDBase int
	// Registry is the host-wide file that gives each Dir its own range of
	// uids (DefaultRegistry), so that two platforms on one machine never give
	// their tenants the same uid.
	Registry string
	// MaxProcs is RLIMIT_NPROC of sandboxed processes (DefaultMaxProcs): as
	// root it bounds all processes and threads of a tenant, otherwise those
	// of one sandbox.
	MaxProcs int
	// TmpBytes is the size of /tmp and of /dev/shm in a sandbox (DefaultTmpBytes).
	TmpBytes int64
	// Allow is the operator's egress allow-list (SLESS_EGRESS_ALLOW), opened
	// to functions (egress.ParseAllow).
	Allow []egress.Rule
}

// Sandbox makes sandboxed commands. It is safe for concurrent use.
type Sandbox struct {
	opts      Options
	mode      Mode
	root      bool // privileged bwrap, then setpriv (see the package doc)
	bwrap     string
	setpriv   string
	fixed     []string // the bwrap arguments every sandbox shares
	made      []string // directories fixed creates, so Spec binds do not make them again
	uids      *uidTable
	net       *egress.Network
	filter    []byte            // the seccomp filter (seccomp.Filter)
	groups    *cgroup.Hierarchy // nil when no cgroup can be made: groupsWhy
	groupsWhy string
}

// New returns a Sandbox, after checking that one can be made here by running
// a program in it. It returns EINVALID without a Dir and EUNAVAILABLE, with
// the reason and what to install, when no sandbox can be made (unless
// Options.Insecure). Without cgroups (a normal user without a delegated
// subtree) it still works, with per-process limits only: CgroupsWhy says so.
func New(opts Options) (*Sandbox, error) {
	if opts.Dir == "" {
		return nil, domain.Errorf(domain.EINVALID, "sandbox: Options.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, domain.Errorf(domain.EINVALID, "sandbox: %v", err)
	}
	opts.Dir = dir
	if opts.UIDBase <= 0 {
		opts.UIDBase = DefaultUIDBase
	}
	if opts.Registry == "" {
		opts.Registry = DefaultRegistry
	}
	if opts.MaxProcs <= 0 {
		opts.MaxProcs = DefaultMaxProcs
	}
	if opts.TmpBytes <= 0 {
		opts.TmpBytes = DefaultTmpBytes
	}
	s := &Sandbox{opts: opts, mode: ModeNone}
	if opts.Insecure {
		return s, nil
	}
	if err := supported(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "sandbox: create %s: %v", dir, err)
	}
	s.mode = ModeBubblewrap
	s.root = os.Geteuid() == 0
	if s.bwrap, err = exec.LookPath("bwrap"); err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "no sandbox: bubblewrap is not installed (apt-get install bubblewrap): %v", err)
	}
	if s.root {
		if s.setpriv, err = exec.LookPath("setpriv"); err != nil {
			return nil, domain.Errorf(domain.EUNAVAILABLE, "no sandbox: setpriv (util-linux) is not installed: %v", err)
		}
	}
	if s.net, err = egress.New(egress.Options{Allow: opts.Allow}); err != nil {
		return nil, err
	}
	if s.filter, err = seccomp.Filter(); err != nil {
		return nil, err
	}
	if s.uids, err = newUIDTable(dir, opts.Registry, opts.UIDBase, s.root); err != nil {
		return nil, err
	}
	sweepUnassigned(dir)
	etc, err := writeNetworkFiles(dir)
	if err != nil {
		return nil, err
	}
	s.fixed, s.made = fixedArgs(s.root, opts.TmpBytes, etc)
	if err := s.probe(); err != nil {
		return nil, err
	}
	s.groups, err = cgroup.New(cgroup.Options{Name: groupName(dir), Sweep: groupPrefix})
	if err != nil {
		s.groupsWhy = domain.ErrorMessage(err)
	}
	return s, nil
}

// Close removes what the sandbox made on the machine outside Dir (its
// cgroups). Sandboxes still running are killed.
func (s *Sandbox) Close() error {
	if s.groups == nil {
		return nil
	}
	return s.groups.Close()
}

// groupName is the parent cgroup of the sandboxes of dir: one per data dir,
// so that a second platform on the machine has its own, and a restarted one
// finds (and clears) what its previous run left; other platforms clear it
// when it is empty (see groupPrefix).
func groupName(dir string) string {
	sum := sha256.Sum256([]byte(dir))
	return groupPrefix + hex.EncodeToString(sum[:4])
}

// groupPrefix starts the names of sandboxes' parent cgroups: New sweeps the
// empty ones that platforms which died left (their data dirs may be gone).
const groupPrefix = "sless-sb-"

// CgroupsWhy says why sandboxes have no cgroup (their memory is then limited
// per process only), or "" when they have one.
func (s *Sandbox) CgroupsWhy() string { return s.groupsWhy }

// FunctionNetwork is the network policy of function processes and job runs:
// the internet and the operator's allow-list.
func (s *Sandbox) FunctionNetwork() egress.Policy {
	if s.net == nil {
		return egress.Policy{}
	}
	return s.net.Functions()
}

// NetworkEnforced reports whether the egress policy is enforced whole (see
// egress.Network.Enforced); in ModeNone there is no policy at all.
func (s *Sandbox) NetworkEnforced() bool { return s.net != nil && s.net.Enforced() }

// Mode returns how processes are isolated.
func (s *Sandbox) Mode() Mode { return s.mode }

// Describe says in a few words how processes are isolated, for logs and /readyz.
func (s *Sandbox) Describe() string {
	if s.mode == ModeNone {
		return "none: functions run as plain processes of the platform's user (insecure)"
	}
	who := fmt.Sprintf("the platform's uid %d in a user namespace", os.Getuid())
	if s.root {
		who = fmt.Sprintf("a host uid per tenant (from %d), no capabilities", s.uids.first)
	}
	memory := "memory per process only (" + s.groupsWhy + ")"
	if s.groups != nil {
		memory = "memory and processes per instance in " + s.groups.Describe()
	}
	return fmt.Sprintf("bubblewrap: %s, seccomp filter, read-only root, private /tmp, PID and network namespaces; %s; network: %s",
		who, memory, s.net.Describe())
}

// probe runs true(1) in a sandbox of the nobody uid and reports why it failed.
func (s *Sandbox) probe() error {
	truePath, err := exec.LookPath("true")
	if err != nil {
		return domain.Errorf(domain.EUNAVAILABLE, "no sandbox: no true(1) to test it with: %v", err)
	}
	uid := os.Getuid()
	if s.root {
		uid = nobody
	}
	c, err := s.command(Spec{Path: truePath, Dir: "/"}, uid)
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err = c.Start(); err == nil {
		timer := time.AfterFunc(30*time.Second, func() { _ = c.Process.Kill() })
		err = c.Wait()
		timer.Stop()
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return domain.Errorf(domain.EUNAVAILABLE, "no sandbox: bubblewrap cannot make one here (are user namespaces enabled? "+
			"sysctl kernel.unprivileged_userns_clone / user.max_user_namespaces): %s", msg)
	}
	return nil
}

// nobody is the uid of the probe sandbox as root.
const nobody = 65534

// Spec is one program to run in a sandbox. Paths are the host's: the sandbox
// rewrites those below a bind's source to its destination.
type Spec struct {
	// Tenant is the namespace whose processes these are: it selects the uid
	// (as root) and the home.
	Tenant string
	Path   string   // the program
	Args   []string // its arguments
	Dir    string   // the working directory
	Env    []string // the whole environment
	// Binds are the directories the program sees besides the fixed root.
	Binds []Bind
	// Roots are host directories bound read-only at their own path: the
	// prefix of an interpreter or toolchain outside /usr.
	Roots []string
	// Home binds the tenant's persistent home, writable, at HomeDir (for the
	// caches of build tools).
	Home bool
	// Network is what the program may reach besides itself; the zero
	// Policy opens nothing (not even DNS). Ignored in ModeNone.
	Network egress.Policy
	// ExtraFiles are open files the program gets as descriptors 3, 4, ...
	// (a listening socket); the caller keeps and closes its own copies.
	ExtraFiles []*os.File
	// MemoryBytes bounds the memory of all the sandbox's processes together
	// (a cgroup; 0: none), DataBytes the private writable memory of each
	// (RLIMIT_DATA; 0: none), the second line, and the only one without
	// cgroups. MaxProcs bounds its processes and threads together (a cgroup;
	// 0: Options.MaxProcs).
	MemoryBytes, DataBytes uint64
	MaxProcs               int
	// Unassigned starts the program before its tenant is known (a warm
	// pool); Tenant must be empty, and Cmd.Assign gives it one later. As
	// root the program runs as host uid 0 with only Caps in its permitted,
	// effective and bounding sets (none inheritable, no_new_privs), which
	// it needs to switch itself, for good, to the uid and gid Assign
	// returns; its /etc/passwd and /etc/group are its own, which Assign
	// completes. As a normal user it runs as the platform's uid with no
	// capability, as every sandbox does.
	Unassigned bool
	// Caps are the capabilities an Unassigned program keeps until it
	// switches, as setpriv(1) names them ("setuid"); ignored otherwise.
	Caps []string
	// SecretFiles are files the program reads at
	// domain.SecretFilesDir/<name> (name → content): read-only, 0440, on a
	// tmpfs of the sandbox's own, their content fed to bwrap through pipes
	// (see "Secret files" in the package doc). Not for a sandbox of
	// ModeNone or an Unassigned one (EINVALID).
	SecretFiles map[string][]byte
}

// Bind makes the host directory Source visible at Dest.
type Bind struct {
	Source   string
	Dest     string
	Writable bool
}

// Command prepares spec to run in the sandbox (or, in ModeNone, as a plain
// process). Set Stdout, Stderr and SysProcAttr on the result, then Start it.
// Errors: EINVALID (a relative path), EUNAVAILABLE (the tenant's uid or home
// cannot be recorded).
func (s *Sandbox) Command(spec Spec) (*Cmd, error) {
	if err := s.checkSecretFiles(spec); err != nil {
		return nil, err
	}
	if s.mode == ModeNone {
		cmd := exec.Command(spec.Path, spec.Args...)
		cmd.Dir, cmd.Env, cmd.ExtraFiles = spec.Dir, spec.Env, spec.ExtraFiles
		return &Cmd{Cmd: cmd, spec: spec, data: spec.DataBytes}, nil
	}
	if spec.Unassigned {
		return s.unassigned(spec)
	}
	uid, err := s.uids.get(spec.Tenant)
	if err != nil {
		return nil, err
	}
	return s.command(spec, uid)
}

// TenantHome returns the host directory of a tenant's home (created on first
// use, owned by the tenant's uid), which sandboxes with Spec.Home see at
// HomeDir; "" in ModeNone, where build tools use the platform user's own.
// Errors: EUNAVAILABLE.
func (s *Sandbox) TenantHome(tenant string) (string, error) {
	if s.mode == ModeNone {
		return "", nil
	}
	uid, err := s.uids.get(tenant)
	if err != nil {
		return "", err
	}
	return s.uids.home(uid)
}

// Owner returns the host uid and gid that a tenant's sandboxed processes run
// as, so that the caller can hand them a directory to write (a build's own).
// Errors: EUNAVAILABLE.
func (s *Sandbox) Owner(tenant string) (uid, gid int, err error) {
	if s.mode == ModeNone || !s.root {
		return os.Getuid(), os.Getgid(), nil
	}
	uid, err = s.uids.get(tenant)
	return uid, uid, err
}

// command builds the bwrap command line of spec for host uid uid.
func (s *Sandbox) command(spec Spec, uid int) (*Cmd, error) {
	b := &argBuilder{made: map[string]bool{}}
	for _, d := range s.made {
		b.made[d] = true
	}
	b.args = append(b.args, s.fixed...)
	users, err := s.identity(spec, uid)
	if err != nil {
		return nil, err
	}
	b.add("--ro-bind", filepath.Join(users, "passwd"), "/etc/passwd")
	b.add("--ro-bind", filepath.Join(users, "group"), "/etc/group")
	for _, r := range spec.Roots {
		if !filepath.IsAbs(r) {
			return nil, domain.Errorf(domain.EINVALID, "sandbox: root %q is not absolute", r)
		}
		r = filepath.Clean(r)
		if b.covered(r) {
			continue
		}
		b.dirs(filepath.Dir(r))
		b.add("--ro-bind", r, r)
		b.made[r] = true
	}
	if spec.Home {
		home, err := s.uids.home(uid)
		if err != nil {
			return nil, err
		}
		spec.Binds = append(spec.Binds, Bind{Source: home, Dest: HomeDir, Writable: true})
	}
	for _, bind := range spec.Binds {
		if !filepath.IsAbs(bind.Source) || !filepath.IsAbs(bind.Dest) {
			return nil, domain.Errorf(domain.EINVALID, "sandbox: bind %s → %s is not absolute", bind.Source, bind.Dest)
		}
		b.dirs(filepath.Dir(bind.Dest))
		op := "--ro-bind"
		if bind.Writable {
			op = "--bind"
		}
		b.add(op, bind.Source, bind.Dest)
		b.made[filepath.Clean(bind.Dest)] = true
	}
	// bwrap's own descriptors follow the program's (Spec.ExtraFiles).
	fds := bwrapFDs(len(spec.ExtraFiles))
	secrets := secretArgs(b, spec.SecretFiles, fds.secrets, s.root)
	dir := translate(spec.Binds, spec.Dir)
	if dir == "" {
		dir = "/"
	}
	b.add("--chdir", dir)
	b.add("--info-fd", strconv.Itoa(fds.info), "--block-fd", strconv.Itoa(fds.block), "--seccomp", strconv.Itoa(fds.seccomp))
	// The program goes on bwrap's own command line (--args takes options
	// only); the options, which name host paths, do not.
	var argv []string
	argv = append(argv, "--args", strconv.Itoa(fds.args), "--")
	switch {
	case s.root && spec.Unassigned:
		argv = append(argv, s.setpriv, "--clear-groups", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"+capList(spec.Caps), "--")
	case s.root:
		id := strconv.Itoa(uid)
		argv = append(argv, s.setpriv, "--reuid="+id, "--regid="+id, "--clear-groups", "--no-new-privs",
			"--inh-caps=-all", "--bounding-set=-all", "--")
	}
	argv = append(argv, translate(spec.Binds, spec.Path))
	for _, a := range spec.Args {
		argv = append(argv, translate(spec.Binds, a))
	}
	env := EnvInside(spec.Binds, spec.Env)
	maxProcs := spec.MaxProcs
	if maxProcs <= 0 {
		maxProcs = s.opts.MaxProcs
	}
	cmd := exec.Command(s.bwrap, argv...)
	cmd.Env = env // bwrap and setpriv pass it on unchanged
	c := &Cmd{Cmd: cmd, s: s, spec: spec, data: spec.DataBytes, nproc: uint64(s.opts.MaxProcs),
		group:     cgroup.Limits{MemoryBytes: int64(spec.MemoryBytes), MaxProcs: int64(maxProcs)},
		bwrapArgs: b.args, fds: fds, secrets: secrets}
	if s.root && spec.Unassigned {
		c.users = users
	}
	return c, nil
}

// argBuilder collects bwrap arguments and the directories they create.
type argBuilder struct {
	args []string
	made map[string]bool
}

func (b *argBuilder) add(args ...string) { b.args = append(b.args, args...) }

// dirs creates dir and its parents, traversable (bwrap would make them 0700).
func (b *argBuilder) dirs(dir string) {
	dir = filepath.Clean(dir)
	if dir == "/" || b.made[dir] {
		return
	}
	b.dirs(filepath.Dir(dir))
	b.add("--perms", "0755", "--dir", dir)
	b.made[dir] = true
}

// covered reports whether path is already visible: below a directory bound whole.
func (b *argBuilder) covered(path string) bool {
	for _, top := range wholeDirs {
		if path == top || strings.HasPrefix(path, top+"/") {
			return true
		}
	}
	return false
}

// wholeDirs are host directories every sandbox sees whole (read-only).
var wholeDirs = []string{"/usr"}

// PathInside returns the path at which a sandbox with binds sees the host
// path p: below a bind's destination when p is below its source (the
// longest source wins), p itself otherwise.
func PathInside(binds []Bind, p string) string { return translate(binds, p) }

// EnvInside returns env as a sandbox with binds sees it: the host paths of
// values that are absolute paths or lists of them (PATH, PYTHONPATH)
// rewritten by PathInside.
func EnvInside(binds []Bind, env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		out[i] = k + "=" + translateList(binds, v)
	}
	return out
}

// translate rewrites a host path below a bind's source to the sandbox's path;
// the longest source wins. Anything else is returned as it is.
func translate(binds []Bind, p string) string {
	best := -1
	for i, b := range binds {
		src := filepath.Clean(b.Source)
		if (p == src || strings.HasPrefix(p, src+"/")) && (best < 0 || len(src) > len(filepath.Clean(binds[best].Source))) {
			best = i
		}
	}
	if best < 0 {
		return p
	}
	return filepath.Join(binds[best].Dest, strings.TrimPrefix(p, filepath.Clean(binds[best].Source)))
}

// translateList translates each element of a colon-separated list of
// absolute paths (PATH, GOPATH); any other value is kept.
func translateList(binds []Bind, v string) string {
	if !strings.HasPrefix(v, "/") {
		return v
	}
	parts := strings.Split(v, ":")
	for i, p := range parts {
		if strings.HasPrefix(p, "/") {
			parts[i] = translate(binds, p)
		}
	}
	return strings.Join(parts, ":")
}

// bwrapFD are the file descriptors of a bwrap process after the program's
// own: its arguments (--args), where it writes the PID of the sandbox's init
// (--info-fd), what it waits on before starting the program (--block-fd),
// the seccomp filter (--seccomp), then the first of the secret files'
// contents (--ro-bind-data, one each). Cmd.Start passes them in this order
// after Spec.ExtraFiles.
type bwrapFD struct{ args, info, block, seccomp, secrets int }

func bwrapFDs(extra int) bwrapFD {
	first := 3 + extra
	return bwrapFD{args: first, info: first + 1, block: first + 2, seccomp: first + 3, secrets: first + 4}
}

// etcFiles are the /etc entries a sandbox sees: the dynamic loader, CA
// certificates, name resolution, time zone, MIME types, alternatives links.
// passwd and group are generated per uid.
var etcFiles = []string{
	"alternatives", "ca-certificates", "ca-certificates.conf", "crypto-policies", "gai.conf", "host.conf",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "mime.types", "nsswitch.conf",
	"os-release", "pki", "protocols", "services", "ssl", "timezone",
}

// writeNetworkFiles writes the /etc files of a sandbox's own network into
// dir/etc and returns that folder: resolv.conf naming slirp4netns's DNS
// forwarder, hosts naming only localhost (the host's own names would lead
// nowhere).
func writeNetworkFiles(dir string) (string, error) {
	etc := filepath.Join(dir, "etc")
	files := map[string]string{
		"resolv.conf": "nameserver " + egress.Nameserver + "\n",
		"hosts":       "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
	}
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return "", domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			return "", domain.Errorf(domain.EUNAVAILABLE, "sandbox: %v", err)
		}
	}
	return etc, nil
}

// hostLinks are the top-level directories that merged-/usr systems make links
// into /usr; they are linked the same way, or bound when they are directories.
var hostLinks = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// fixedArgs returns the bwrap arguments every sandbox shares and the
// directories they create.
func fixedArgs(root bool, tmpBytes int64, etc string) ([]string, []string) {
	b := &argBuilder{made: map[string]bool{}}
	b.add("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try", "--die-with-parent", "--new-session",
		"--hostname", "sless")
	if !root {
		b.add("--unshare-user")
	}
	b.add("--ro-bind", "/usr", "/usr")
	b.made["/usr"] = true
	for _, name := range hostLinks {
		p := "/" + name
		fi, err := os.Lstat(p)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(p); err == nil {
				b.add("--symlink", target, p)
			}
		case fi.IsDir():
			b.add("--ro-bind", p, p)
			b.made[p] = true
		}
	}
	b.dirs("/etc")
	for _, name := range etcFiles {
		p := "/etc/" + name
		if _, err := os.Stat(p); err == nil { // follows links
			b.add("--ro-bind", p, p)
		}
	}
	for _, name := range []string{"resolv.conf", "hosts"} {
		b.add("--ro-bind", filepath.Join(etc, name), "/etc/"+name)
	}
	size := strconv.FormatInt(tmpBytes, 10)
	b.add("--proc", "/proc", "--dev", "/dev",
		"--perms", "1777", "--size", size, "--tmpfs", "/tmp",
		"--perms", "1777", "--size", size, "--tmpfs", "/dev/shm")
	for _, d := range []string{"/proc", "/dev", "/tmp", "/dev/shm"} {
		b.made[d] = true
	}
	made := make([]string, 0, len(b.made))
	for d := range b.made {
		made = append(made, d)
	}
	return b.args, made
}

// errNoInfo means bwrap exited before it reported the sandbox's init.
var errNoInfo = errors.New("bubblewrap exited before the sandbox started")
