//go:build linux

package seccomp_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// runWork is a Go program doing what a Go function does: goroutines on
// several threads, a child process, a loopback connection, a file.
func runWork() {
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "go: %s: %v\n", what, err)
		os.Exit(1)
	}
	var wg sync.WaitGroup
	sums := make([]int, 64)
	for i := range sums {
		wg.Go(func() {
			for j := range 100_000 {
				sums[i] += j % (i + 1)
			}
		})
	}
	wg.Wait()
	out, err := exec.Command("/bin/sh", "-c", "echo child").Output()
	if err != nil || string(out) != "child\n" {
		fail("exec", fmt.Errorf("%q %v", out, err))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail("listen", err)
	}
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(c, c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		fail("dial", err)
	}
	buf := make([]byte, 5)
	if _, err := c.Write([]byte("hello")); err != nil {
		fail("write", err)
	}
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hello" {
		fail("echo", fmt.Errorf("%q %v", buf, err))
	}
	if _, err := os.ReadFile("/etc/os-release"); err != nil {
		fail("read", err)
	}
	fmt.Println("go ok")
}

// pythonWork uses threads, a thread pool, subprocess, fork, a process
// pool, a loopback socket and a file.
const pythonWork = `
import concurrent.futures, multiprocessing, os, socket, subprocess, threading
out = []
ts = [threading.Thread(target=lambda: out.append(sum(range(100000)))) for _ in range(8)]
[t.start() for t in ts]; [t.join() for t in ts]
assert len(out) == 8
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    assert list(ex.map(abs, [-1, -2])) == [1, 2]
assert subprocess.run(['/bin/echo', 'child'], capture_output=True, check=True).stdout == b'child\n'
pid = os.fork()
if pid == 0:
    os._exit(7)
assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7
with multiprocessing.Pool(2) as pool:
    assert pool.map(abs, [-3, -4]) == [3, 4]
srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen()
def serve():
    c, _ = srv.accept(); c.sendall(c.recv(5)); c.close()
threading.Thread(target=serve).start()
cl = socket.create_connection(srv.getsockname()); cl.sendall(b'hello')
assert cl.recv(5) == b'hello'
open('/etc/os-release').read()
print('python ok')
`

// nodeWork uses a worker thread, child processes, the thread pool (file
// system, crypto), a loopback server and files (through io_uring when
// libuv is told to use it).
const nodeWork = `
const { Worker } = require('worker_threads');
const cp = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const net = require('net');
(async () => {
  const w = new Worker('require("worker_threads").parentPort.postMessage(6 * 7)', { eval: true });
  const v = await new Promise((res, rej) => { w.on('message', res); w.on('error', rej); });
  if (v !== 42) throw new Error('worker said ' + v);
  if (cp.execFileSync('/bin/echo', ['child']).toString() !== 'child\n') throw new Error('execFileSync');
  await new Promise((res, rej) => cp.exec('echo async', (e, out) => e ? rej(e) : res(out)));
  await fs.promises.writeFile('/tmp/node.txt', 'written');
  if (await fs.promises.readFile('/tmp/node.txt', 'utf8') !== 'written') throw new Error('file');
  await fs.promises.readFile('/etc/os-release');
  await new Promise((res, rej) => crypto.pbkdf2('p', 's', 1000, 32, 'sha256', e => e ? rej(e) : res()));
  const srv = net.createServer(s => s.pipe(s));
  await new Promise(r => srv.listen(0, '127.0.0.1', r));
  const echoed = await new Promise((res, rej) => {
    const c = net.connect(srv.address().port, '127.0.0.1', () => c.write('hello'));
    c.on('data', d => { res(d.toString()); c.end(); });
    c.on('error', rej);
  });
  srv.close();
  if (echoed !== 'hello') throw new Error('echo ' + echoed);
  console.log('node ok');
})().catch(e => { console.error(e); process.exit(1); });
`

// TestRuntimesWork runs what functions do under the filter: a shell
// pipeline, Python, Node.js and Go programs with threads, child processes,
// sockets and files.
func TestRuntimesWork(t *testing.T) {
	t.Parallel()
	bwrapPath(t)
	filter := mustFilter(t)
	pyExe, pyPrefix := mustPython(t)
	node := mustLookPath(t, "node")
	sh := mustLookPath(t, "sh")
	for _, as := range runners(t) {
		for _, w := range []struct {
			name   string
			argv   []string
			env    []string
			reveal []string
			want   string
		}{
			{"sh", []string{sh, "-c", `a=$(echo sub | cat); ls / >/dev/null && echo "sh $a"`}, nil, nil, "sh sub"},
			{"python", []string{pyExe, "-c", pythonWork}, nil, []string{pyPrefix}, "python ok"},
			{"node", []string{node, "-e", nodeWork}, nil, nil, "node ok"},
			// Node 20 turned libuv's io_uring off by default; this turns it on.
			{"node io_uring", []string{node, "-e", nodeWork}, []string{"UV_USE_IO_URING=1"}, nil, "node ok"},
			{"go", []string{selfInSandbox}, []string{probeEnv + "=work"}, nil, "go ok"},
		} {
			t.Run(as.name+"/"+w.name, func(t *testing.T) {
				t.Parallel()
				s := sandbox{as: as, filter: filter, reveal: w.reveal, env: w.env}
				out, code := s.run(t, w.argv...)
				if code != 0 || !strings.Contains(out, w.want) {
					t.Fatalf("exit %d, want %q:\n%s", code, w.want, out)
				}
			})
		}
	}
}

// pythonUnshare enters a new user namespace (os.unshare arrived in Python
// 3.12; older ones go through libc) and prints "unshare ok" or the errno.
const pythonUnshare = `
import ctypes, os
try:
    if hasattr(os, 'unshare'):
        os.unshare(os.CLONE_NEWUSER)
    elif ctypes.CDLL(None, use_errno=True).unshare(0x10000000) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    print('unshare ok')
except OSError as e:
    print('unshare errno', e.errno)
`

// TestNamespacesCannotBeMade runs tools that make namespaces: under the
// filter each fails with EPERM; without it, each of them that the user may
// use succeeds (the control).
func TestNamespacesCannotBeMade(t *testing.T) {
	t.Parallel()
	bwrap := bwrapPath(t)
	filter := mustFilter(t)
	pyExe, pyPrefix := mustPython(t)
	unshare := mustLookPath(t, "unshare")
	for _, as := range runners(t) {
		for _, c := range []struct {
			name   string
			argv   []string
			reveal []string
			denied string // a regexp the output matches under the filter
			// unprivileged: it works without privileges, so the control
			// runs it as every user; otherwise only as root.
			unprivileged bool
		}{
			{"unshare -r", []string{unshare, "-r", "true"}, nil, "Operation not permitted", true},
			{"unshare --net", []string{unshare, "--net", "true"}, nil, "Operation not permitted", false},
			{"python os.unshare", []string{pyExe, "-c", pythonUnshare}, []string{pyPrefix}, "unshare errno 1", true},
			// bwrap says "No permissions to create new namespace" on EPERM.
			{"bwrap", []string{bwrap, "--ro-bind", "/", "/", "--unshare-user", "--unshare-net", "true"}, nil, "No permissions to creat", true},
		} {
			t.Run(as.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				out, code := sandbox{as: as, filter: filter, reveal: c.reveal}.run(t, c.argv...)
				denied := regexp.MustCompile(c.denied)
				if !denied.MatchString(out) {
					t.Errorf("under the filter: exit %d, want a failure with %q:\n%s", code, c.denied, out)
				}
				if !as.privileged && !c.unprivileged {
					return
				}
				out, code = sandbox{as: as, reveal: c.reveal}.run(t, c.argv...)
				if code != 0 || denied.MatchString(out) {
					t.Errorf("without the filter (the control): exit %d:\n%s", code, out)
				}
			})
		}
	}
}
