package localdriver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/localdriver/sandbox"
	"github.com/slessio/sless/runtimes"
)

// poolWrapperDir is where a pooled process sees its runtime's wrapper: /app
// is the function's, and empty until a function takes the process.
const poolWrapperDir = "/sless"

// poolMaxEntries is the most files and folders a version may have for a
// pooled process to take it: each is a link to make (some 10–30 µs), so a
// version with a large node_modules starts as without a pool instead.
const poolMaxEntries = 2000

// poolRetry is how long the pool waits after a process of it ended before
// a function took it, or could not be started (doubling up to a minute
// while starts keep failing), before it starts another.
const poolRetry = time.Second

// warmPool keeps, for each runtime with a pool mode (runtimes.Specialization),
// Options.WarmPool started, sandboxed processes that no tenant owns yet. A
// cold start takes one (take), gives it its tenant and its version
// (specialize), and it serves that function only, until it ends: it is never
// put back, and a new process takes its place in the background.
type warmPool struct {
	d        *Driver
	size     int
	dir      string            // Dir/pool/<pid>-<random>: a folder per process (its /app), and wrappers/
	wrappers map[string]string // runtime → the folder of its wrapper (/sless)
	log      *slog.Logger

	closing chan struct{}
	wg      sync.WaitGroup

	mu     sync.Mutex
	closed bool
	seq    int
	idle   map[string][]*pooled // by runtime, oldest first
	wake   map[string]chan struct{}
	sizes  map[string]int // version directory → its entries (builds never change)
}

// pooled is one process of the pool.
type pooled struct {
	runtime string
	proc    *proc
	cmd     *sandbox.Cmd
	conn    *net.UnixConn // the driver's end of the control socket
	socket  string        // the path of the socket it listens on
	stage   string        // its folder, IdlePoolPrefix+n until taken; stage/app is its /app. Under warmPool.mu
	env     []string      // the environment it started with
	stdout  *switchWriter
	stderr  *switchWriter
	ready   chan struct{} // closed once the wrapper said it waits (runtimes.PoolReady)
}

// newWarmPool starts filling a pool of size processes per runtime, in a new
// folder Dir/pool/<pid>-<random>, after removing the folders of pools whose
// process is gone.
func newWarmPool(d *Driver, size int) (*warmPool, error) {
	root := filepath.Join(d.opts.Dir, "pool")
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: create %s: %v", root, err)
	}
	entries, _ := os.ReadDir(root)
	for _, e := range entries {
		pidText, _, _ := strings.Cut(e.Name(), "-")
		if pid, err := strconv.Atoi(pidText); err == nil && syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(filepath.Join(root, e.Name()))
		}
	}
	// A folder never used before: a process's /app starts empty.
	dir, err := os.MkdirTemp(root, strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: create the warm pool's folder: %v", err)
	}
	p := &warmPool{d: d, size: size, dir: dir, wrappers: map[string]string{},
		log: d.opts.Logger.With("pool", true), closing: make(chan struct{}),
		idle: map[string][]*pooled{}, wake: map[string]chan struct{}{}, sizes: map[string]int{}}
	var rts []runtimes.Runtime
	for _, name := range runtimes.Names() {
		rt, err := runtimes.Lookup(name)
		if err != nil || !rt.Description().Pool {
			continue
		}
		dir := filepath.Join(p.dir, "wrappers", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: create %s: %v", dir, err)
		}
		if err := rt.InstallPool(dir); err != nil {
			return nil, err
		}
		p.wrappers[name] = dir
		p.wake[name] = make(chan struct{}, 1)
		rts = append(rts, rt)
	}
	for _, rt := range rts {
		p.wg.Add(1)
		go p.keep(rt)
	}
	return p, nil
}

// keep keeps p.size idle processes of rt until the pool closes.
func (p *warmPool) keep(rt runtimes.Runtime) {
	defer p.wg.Done()
	name := rt.Name()
	failures := 0
	for {
		p.mu.Lock()
		closed, n := p.closed, len(p.idle[name])
		p.mu.Unlock()
		if closed {
			return
		}
		if n >= p.size {
			select {
			case <-p.wake[name]:
			case <-p.closing:
				return
			}
			continue
		}
		pp, err := p.start(rt)
		if err != nil { // a missing interpreter: retried, less and less often
			wait := min(poolRetry<<min(failures, 6), time.Minute)
			failures++
			p.log.Warn("localdriver: cannot start a process for the warm pool", "runtime", name, "error", err, "retry", wait)
			p.pause(wait)
			continue
		}
		failures = 0
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			pp.proc.kill()
			return
		}
		p.idle[name] = append(p.idle[name], pp)
		p.mu.Unlock()
	}
}

// pause waits d or until the pool closes.
func (p *warmPool) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.closing:
	}
}

// wakeUp tells the keeper of runtime that it may have to start a process.
func (p *warmPool) wakeUp(runtime string) {
	select {
	case p.wake[runtime] <- struct{}{}:
	default:
	}
}

// start starts one process of rt in pool mode, in a sandbox of no tenant
// yet (sandbox.Spec.Unassigned) with an empty folder of its own at /app,
// listening on a socket of its own, with the runtime's memory settings for
// the default memory_mb.
func (p *warmPool) start(rt runtimes.Runtime) (*pooled, error) {
	d := p.d
	p.mu.Lock()
	p.seq++
	stage := filepath.Join(p.dir, IdlePoolPrefix+strconv.Itoa(p.seq))
	p.mu.Unlock()
	app := filepath.Join(stage, "app")
	if err := os.Mkdir(stage, 0o755); err != nil { // new: nothing of another process in it
		return nil, err
	}
	if err := os.Mkdir(app, 0o755); err != nil {
		return nil, err
	}
	wrappers := p.wrappers[rt.Name()]
	rs, err := rt.Command(wrappers, runtimes.ModePool)
	if err != nil {
		return nil, err
	}
	env := functionEnv(rs, append(rt.Description().MemoryEnv(domain.DefaultMemoryMB, nil),
		runtimes.EnvListenFD+"="+strconv.Itoa(listenFD), runtimes.EnvControlFD+"="+strconv.Itoa(listenFD+1)))
	socket, err := d.sockets.path()
	if err != nil {
		return nil, err
	}
	ln, err := d.sockets.listen(socket)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	conn, ctl, err := controlSocket()
	if err != nil {
		d.sockets.remove(socket)
		return nil, err
	}
	defer ctl.Close()
	spec := sandbox.Spec{
		Path: rs.Path, Args: rs.Args, Dir: app, Env: env,
		Binds:       []sandbox.Bind{{Source: app, Dest: appDir}, {Source: wrappers, Dest: poolWrapperDir}},
		Roots:       toolRoots(rs.Path, wrappers),
		Network:     d.sb.FunctionNetwork(),
		MemoryBytes: uint64(domain.DefaultMemoryMB) << 20, // Assign sets the function's, and RLIMIT_DATA
		ExtraFiles:  []*os.File{ln, ctl},
		Unassigned:  true, Caps: rt.Description().PoolCaps,
	}
	cmd, err := d.sb.Command(spec)
	if err != nil {
		conn.Close()
		d.sockets.remove(socket)
		return nil, err
	}
	log := p.log.With("runtime", rt.Name())
	pp := &pooled{runtime: rt.Name(), cmd: cmd, conn: conn, socket: socket, stage: stage, env: env,
		stdout: &switchWriter{w: &lineLogger{log: log, stream: "stdout"}},
		stderr: &switchWriter{w: &lineLogger{log: log, stream: "stderr"}},
		ready:  make(chan struct{})}
	if pp.proc, err = startProc(cmd, pp.stdout, pp.stderr); err != nil {
		conn.Close()
		d.sockets.remove(socket)
		return nil, err
	}
	go pp.readControl()
	go p.watch(pp)
	return pp, nil
}

// controlSocket returns the two ends of a pooled process's control socket:
// the driver's, and the process's, which stays blocking (the wrapper reads
// it synchronously).
func controlSocket() (*net.UnixConn, *os.File, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("control socket: %w", err)
	}
	own := os.NewFile(uintptr(fds[0]), "control")
	defer own.Close()
	c, err := net.FileConn(own)
	if err != nil {
		syscall.Close(fds[1])
		return nil, nil, fmt.Errorf("control socket: %w", err)
	}
	return c.(*net.UnixConn), os.NewFile(uintptr(fds[1]), "control"), nil
}

// readControl reads the control socket until the process closes it, and
// closes ready when the wrapper says it waits.
func (pp *pooled) readControl() {
	defer pp.conn.Close()
	r := bufio.NewReader(pp.conn)
	line, err := r.ReadString('\n')
	if err == nil && line == runtimes.PoolReady {
		close(pp.ready)
	}
	_, _ = io.Copy(io.Discard, r)
}

// isReady reports whether the wrapper waits for its function.
func (pp *pooled) isReady() bool {
	select {
	case <-pp.ready:
		return true
	default:
		return false
	}
}

// watch waits for the process to end, then forgets it if it was idle (the
// keeper starts another after poolRetry) and removes its folder, which holds
// links to its version's files only.
func (p *warmPool) watch(pp *pooled) {
	<-pp.proc.done
	p.mu.Lock()
	list := p.idle[pp.runtime]
	i := slices.Index(list, pp)
	if i >= 0 {
		p.idle[pp.runtime] = slices.Delete(list, i, i+1)
	}
	p.mu.Unlock()
	if i >= 0 {
		p.d.sockets.remove(pp.socket)
		p.log.Warn("localdriver: a process of the warm pool ended", "runtime", pp.runtime, "exit", pp.proc.state.desc)
		p.pause(poolRetry)
		p.wakeUp(pp.runtime)
	}
	p.mu.Lock()
	stage := pp.stage
	p.mu.Unlock()
	_ = os.RemoveAll(stage)
}

// IdlePoolPrefix begins the name of the folder of a pooled process that has
// no function yet; taken, the folder is renamed "<n>-<namespace>-<function>"
// (its /app follows the folder). Tests that look for a function's
// processes by the folders bound into them (sandboxtest.PIDs) skip those of
// the idle pool, which serve no one.
const IdlePoolPrefix = "idle-"

// ServesNoFunction reports whether source, the path of a file or folder
// bound into a sandbox, says nothing of which function the sandbox runs:
// an idle pooled process's folder (see IdlePoolPrefix), the pool's
// wrappers, the identity files of a sandbox made before its tenant was
// known, the network files every sandbox shares. A sandbox binding only
// such paths is the idle warm pool's.
func ServesNoFunction(source string) bool {
	parts := strings.Split(filepath.ToSlash(source), "/")
	for i, p := range parts {
		switch {
		case strings.HasPrefix(p, IdlePoolPrefix), p == "wrappers" && i > 1 && parts[i-2] == "pool",
			p == "unassigned", p == "etc" && i > 0 && parts[i-1] == "sandbox":
			return true
		}
	}
	return false
}

// poolReadyWait bounds the wait of specialize for a pooled process that is
// still starting; past it the instance starts as without a pool.
const poolReadyWait = 10 * time.Second

// take removes an idle process of runtime rt from the pool and returns it,
// nil when there is none that serves a function with the environment env
// (runtimes.Description.PoolServes), when version directory dir is too
// large to link (poolMaxEntries) or the pool is off. One whose wrapper is
// ready goes first.
func (p *warmPool) take(rt runtimes.Description, dir string, env []string) *pooled {
	if p == nil || !rt.Pool || p.entries(dir) > poolMaxEntries {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	list := p.idle[rt.Name]
	best := -1
	for i, pp := range list {
		if pp.proc.exited() || !rt.PoolServes(pp.env, env) {
			continue
		}
		if best < 0 || pp.isReady() && !list[best].isReady() {
			best = i
		}
	}
	if p.closed || best < 0 {
		return nil
	}
	pp := list[best]
	p.idle[rt.Name] = slices.Delete(list, best, best+1)
	p.wakeUp(rt.Name)
	return pp
}

// entries returns how many files and folders dir holds, counted once (up
// to one past poolMaxEntries).
func (p *warmPool) entries(dir string) int {
	p.mu.Lock()
	n, ok := p.sizes[dir]
	p.mu.Unlock()
	if ok {
		return n
	}
	errTooMany := errors.New("too many")
	_ = filepath.WalkDir(dir, func(_ string, _ fs.DirEntry, err error) error {
		if n++; err != nil || n > poolMaxEntries {
			return errTooMany
		}
		return nil
	})
	p.mu.Lock()
	p.sizes[dir] = n
	p.mu.Unlock()
	return n
}

// specialize makes the pooled process pp the first process of instance in
// of version directory dir, whose server would have been started as rs with
// env: the sandbox gets the tenant (its uid, the function's memory limits),
// its /app the version's files (links), and the process, on its control
// socket, the function's folder, environment, uid and gid; its output goes
// to the instance's log from then on. The process then switches to the uid,
// loads the function and serves (waitHealthy tells). When something fails
// before the process was told anything, pp is killed and the error returned:
// the caller starts a process as without a pool.
func (p *warmPool) specialize(in *instance, pp *pooled, dir string, rs runtimes.Spec, env []string) (*proc, error) {
	fail := func(err error) (*proc, error) {
		pp.proc.kill()
		return nil, err
	}
	// take prefers a ready process but takes one still starting when no
	// other is: its sandbox binds its folder as it starts, so the folder is
	// not renamed before the wrapper says it waits.
	select {
	case <-pp.ready:
	case <-pp.proc.done:
		return fail(errors.New("the pooled process ended before it was ready"))
	case <-time.After(poolReadyWait):
		return fail(errors.New("the pooled process was not ready in time"))
	}
	uid, gid, err := pp.cmd.Assign(in.key.ns, uint64(in.memoryMB)<<20, uint64(in.memoryMB+memoryAllowanceMB)<<20)
	if err != nil {
		return fail(err)
	}
	p.mu.Lock()
	taken := filepath.Join(p.dir, strings.TrimPrefix(filepath.Base(pp.stage), IdlePoolPrefix)+"-"+in.key.ns+"-"+in.key.fn)
	err = os.Rename(pp.stage, taken)
	if err == nil {
		pp.stage = taken
	}
	p.mu.Unlock()
	if err != nil {
		return fail(err)
	}
	app := filepath.Join(taken, "app")
	if err := linkTree(dir, app); err != nil {
		return fail(err)
	}
	view := []sandbox.Bind{{Source: dir, Dest: appDir}} // dir as the process sees it
	if p.d.sb.Mode() == sandbox.ModeNone {
		view[0].Dest = app
	}
	msg, err := json.Marshal(runtimes.Specialization{Dir: sandbox.PathInside(view, rs.Dir),
		Env: sandbox.EnvInside(view, functionEnv(rs, env)), UID: uid, GID: gid})
	if err != nil {
		return fail(err)
	}
	pp.stdout.set(&lineLogger{log: in.log, stream: "stdout"})
	pp.stderr.set(&lineLogger{log: in.log, stream: "stderr", tail: in.stderr})
	_ = pp.conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := pp.conn.Write(append(msg, '\n')); err != nil {
		return fail(fmt.Errorf("specialize a pooled process: %w", err))
	}
	_ = pp.conn.CloseWrite()
	pp.proc.started = time.Now() // its crash-loop accounting starts here
	return pp.proc, nil
}

// linkTree makes dst (an empty folder) hold what src holds: its folders
// made anew, its files and links hard-linked (copied when src is on another
// file system). Nothing is written through a link: the sandbox sees dst
// read-only, and builds are never changed.
func linkTree(src, dst string) error {
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == src {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			info, err := e.Info()
			if err != nil {
				return err
			}
			return os.Mkdir(target, info.Mode().Perm())
		}
		if err := os.Link(path, target); err == nil || !errors.Is(err, syscall.EXDEV) {
			return err
		}
		return copyFile(path, target)
	})
	if err != nil {
		return domain.Errorf(domain.EUNAVAILABLE, "localdriver: give a pooled process its version: %v", err)
	}
	return nil
}

// copyFile copies a regular file or a symbolic link.
func copyFile(src, dst string) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, info.Mode().Perm())
}

// close kills the idle processes and waits for the keepers; the processes
// functions took are their instances' to stop.
func (p *warmPool) close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.closing)
	var idle []*pooled
	for _, list := range p.idle {
		idle = append(idle, list...)
	}
	p.idle = map[string][]*pooled{}
	p.mu.Unlock()
	p.wg.Wait()
	var wg sync.WaitGroup
	for _, pp := range idle {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pp.proc.kill()
			p.d.sockets.remove(pp.socket)
		}()
	}
	wg.Wait()
	_ = os.RemoveAll(p.dir)
}

// idlePIDs returns the host pids of the idle processes of runtime; ready
// says whether all p.size of them wait for a function.
func (p *warmPool) idlePIDs(runtime string) (pids []int, ready bool) {
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	ready = len(p.idle[runtime]) >= p.size
	for _, pp := range p.idle[runtime] {
		pids = append(pids, pp.proc.pid)
		ready = ready && pp.isReady()
	}
	return pids, ready
}

// waitFull waits until every runtime's pool is full of ready processes, or
// ctx ends.
func (p *warmPool) waitFull(ctx context.Context) error {
	for {
		full := true
		for runtime := range p.wrappers {
			_, ready := p.idlePIDs(runtime)
			full = full && ready
		}
		if full {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}
