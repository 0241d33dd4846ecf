package localdriver

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver/sandbox"
	"github.com/slessio/sless/localdriver/sandbox/egress"
	"github.com/slessio/sless/runtimes"
)

// appDir is where a sandbox sees a version's directory, as the images have
// it: the wrapper in /app, the user's code in /app/function.
const appDir = "/app"

// processCommand prepares a function process (server or job) of version
// directory dir: the version read-only at /app, HOME and TMPDIR the
// sandbox's private /tmp, env after the runtime's base environment, the
// functions' network policy, memory_mb for the whole sandbox (a cgroup) and,
// as a second line, RLIMIT_DATA of memory_mb plus memoryAllowanceMB per
// process, and secretFiles at /run/secrets (sandbox.Spec.SecretFiles). A
// server gets its listening socket ln as descriptor listenFD; a job passes
// nil.
func (d *Driver) processCommand(k fnKey, rs runtimes.Spec, dir string, env []string, secretFiles map[string][]byte, memoryMB int, ln *os.File) (*sandbox.Cmd, error) {
	spec := sandbox.Spec{
		Tenant: k.ns, Path: rs.Path, Args: rs.Args, Dir: rs.Dir, Env: functionEnv(rs, env),
		Binds:       []sandbox.Bind{{Source: dir, Dest: appDir}},
		Roots:       toolRoots(rs.Path, dir),
		Network:     d.sb.FunctionNetwork(),
		MemoryBytes: uint64(memoryMB) << 20,
		DataBytes:   uint64(memoryMB+memoryAllowanceMB) << 20,
		SecretFiles: secretFiles,
	}
	if ln != nil {
		spec.ExtraFiles = []*os.File{ln}
	}
	return d.sb.Command(spec)
}

// functionEnv is the whole environment of a function process: the
// runtime's base, HOME and TMPDIR the sandbox's private /tmp, then env.
func functionEnv(rs runtimes.Spec, env []string) []string {
	full := make([]string, 0, len(rs.Env)+len(env)+2)
	return append(append(append(full, rs.Env...), "HOME=/tmp", "TMPDIR=/tmp"), env...)
}

// buildOptions returns how the build steps of function k in build directory
// dir run: each tool in a sandbox of the tenant with dir writable at /app and
// the tenant's home (its Go and npm caches) at sandbox.HomeDir, reaching only
// its package indexes (buildNetwork); without a sandbox, as plain processes
// with the platform's own caches. Installed dependencies (Python's, npm's)
// are kept for reuse in Dir/deps/<ns>, the tenant's own.
func (d *Driver) buildOptions(k fnKey, dir string, env []string, progress io.Writer) runtimes.BuildOptions {
	opts := runtimes.BuildOptions{Env: env, CheckTimeout: d.opts.StartTimeout, StepTimeout: d.opts.BuildStepTimeout,
		MaxDepsBytes: d.opts.MaxDepsBytes, DepsCache: filepath.Join(d.opts.Dir, "deps", k.ns)}
	if d.sb.Mode() == sandbox.ModeBubblewrap {
		opts.Home = sandbox.HomeDir
	}
	opts.Runner = func(ctx context.Context, t runtimes.Tool) ([]byte, error) {
		network, err := buildNetwork(t)
		if err != nil {
			return nil, err
		}
		c, err := d.sb.Command(sandbox.Spec{
			Tenant: k.ns, Path: t.Path, Args: t.Args, Dir: t.Dir, Env: t.Env, Home: true,
			Binds:   []sandbox.Bind{{Source: dir, Dest: appDir, Writable: true}},
			Roots:   toolRoots(t.Path, dir),
			Network: network,
		})
		if err != nil {
			return nil, err
		}
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if progress != nil { // followers see the output as it comes
			c.Stdout = io.MultiWriter(&out, progress)
			c.Stderr = c.Stdout
		}
		c.SysProcAttr = procAttr()
		if err := c.Start(); err != nil {
			return nil, err
		}
		// The whole tool dies with ctx: its process group (and, in a
		// sandbox, its PID namespace with it).
		stop := context.AfterFunc(ctx, func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) })
		err = c.Wait()
		stop()
		return out.Bytes(), err
	}
	return opts
}

// buildNetwork is the network of a build step (runtimes.Tool.Index and
// Internet): a package index the operator configured on a private address
// or on this machine (a local mirror) is opened by its address and port, and
// nothing else is; a public index, configured or the tool's default, opens
// the internet without the private ranges and the host (indexes serve files
// from CDNs whose addresses change), and so does Go's "direct" (modules from
// their repositories). A step that downloads nothing (the entrypoint check)
// gets no network at all.
func buildNetwork(t runtimes.Tool) (egress.Policy, error) {
	p := egress.Policy{Internet: t.Internet}
	rules, err := egress.URLRules(t.Index...)
	if err != nil {
		return p, err
	}
	for _, r := range rules {
		if egress.IsBlocked(r.Prefix.Addr()) {
			p.Allow = append(p.Allow, r)
		} else {
			p.Internet = true
		}
	}
	return p, nil
}

// toolRoots returns the folder a program outside dir lives in, for a sandbox
// to bind: the prefix of its bin folder (a pyenv Python, GOROOT), nothing
// for a program in dir or directly under /usr.
func toolRoots(path, dir string) []string {
	if path == dir || strings.HasPrefix(path, dir+"/") {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	prefix := filepath.Dir(filepath.Dir(real))
	if prefix == "/" || prefix == "/usr" {
		return nil
	}
	return []string{prefix}
}

// handOver gives the build directory to the tenant's uid for its build
// steps (as root; otherwise the platform's uid runs them and owns it).
func (d *Driver) handOver(k fnKey, dir string) error {
	if d.sb.Mode() != sandbox.ModeBubblewrap || os.Geteuid() != 0 {
		return nil
	}
	uid, gid, err := d.sb.Owner(k.ns)
	if err != nil {
		return err
	}
	return chownTree(dir, uid, gid, false)
}

// takeBack makes a built directory the platform's again and readable to its
// tenant's processes (which only ever see it read-only): what the tenant's
// build left can no longer be changed by it.
func (d *Driver) takeBack(dir string) error {
	if d.sb.Mode() != sandbox.ModeBubblewrap || os.Geteuid() != 0 {
		return nil
	}
	return chownTree(dir, os.Getuid(), os.Getgid(), true)
}

// chownTree gives every file below dir to uid:gid (links themselves, not
// their targets); readable makes files readable and folders enterable by
// anyone, keeping other bits.
func chownTree(dir string, uid, gid int, readable bool) error {
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, uid, gid); err != nil {
			return err
		}
		if !readable || e.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		perm := info.Mode().Perm()
		want := perm | 0o444
		if e.IsDir() || perm&0o100 != 0 {
			want |= 0o111
		}
		if want &^= 0o022; want != perm { // never writable by group or others
			return os.Chmod(path, want)
		}
		return nil
	})
	if err != nil {
		return domain.Errorf(domain.EINTERNAL, "set the owner of %s: %v", filepath.Base(dir), err)
	}
	return nil
}
