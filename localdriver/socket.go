package localdriver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/slessio/sless/domain"
)

// endpointScheme starts the endpoint of a function process: "unix:" and the
// path of the socket it serves on (the proxy dials it).
const endpointScheme = "unix:"

// listenFD is the descriptor a function process finds its listening socket
// on (runtimes.EnvListenFD): the first of sandbox.Spec.ExtraFiles.
const listenFD = 3

// maxSocketPath is the longest socket path the kernel takes (sun_path holds
// 108 bytes with the terminating NUL).
const maxSocketPath = 107

// socketDir keeps the Unix sockets function processes serve on. The driver
// makes each socket and hands its process the listening descriptor: the
// process binds nothing, needs no network of the host, and sees no path of
// the host. The folder is 0700 and the platform's, so no tenant and no other
// user of the machine can connect to a function; only the platform's proxy can.
type socketDir struct {
	dir  string
	temp bool // made under the system's temporary folder: removed by close
}

// socketName is the length of a socket's file name: 16 random hex digits
// and ".sock". Random, so that an endpoint recorded before a restart of the
// platform never leads to another function's new process.
const socketName = 16 + len(".sock")

// newSocketDir makes the socket folder: dataDir/sock, unless its sockets'
// paths would be too long for the kernel; then a folder of its own under
// the system's temporary folder. Sockets left by a previous run of the
// driver (whose processes died with it) are removed; live ones (another
// driver on the same folder) are kept.
func newSocketDir(dataDir string) (*socketDir, error) {
	dir := filepath.Join(dataDir, "sock")
	if len(dir)+1+socketName <= maxSocketPath {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: create %s: %v", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: %v", err)
		}
		removeDeadSockets(dir)
		return &socketDir{dir: dir}, nil
	}
	dir, err := os.MkdirTemp("", "sless-sock-")
	if err != nil || len(dir)+1+socketName > maxSocketPath {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: no folder for function sockets with a path short enough (%s): %v", dir, err)
	}
	return &socketDir{dir: dir, temp: true}, nil
}

// removeDeadSockets removes the sockets of dir that nothing listens on.
func removeDeadSockets(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sock") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			_ = os.Remove(path)
		}
	}
}

// path returns a new socket path.
func (s *socketDir) path() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", domain.Errorf(domain.EUNAVAILABLE, "localdriver: %v", err)
	}
	return filepath.Join(s.dir, hex.EncodeToString(b[:])+".sock"), nil
}

// listen makes a listening socket at path (replacing one a previous process
// left) and returns it as a file to hand to a process; the caller closes it
// once the process has it.
func (s *socketDir) listen(path string) (*os.File, error) {
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: listen on %s: %v", filepath.Base(path), err)
	}
	ln.SetUnlinkOnClose(false) // the process keeps serving on it
	f, err := ln.File()
	ln.Close()
	if err != nil {
		_ = os.Remove(path)
		return nil, domain.Errorf(domain.EUNAVAILABLE, "localdriver: %v", err)
	}
	return f, nil
}

// remove removes a socket no process serves on any more.
func (s *socketDir) remove(path string) { _ = os.Remove(path) }

// close removes a temporary socket folder.
func (s *socketDir) close() {
	if s.temp {
		_ = os.RemoveAll(s.dir)
	}
}

// unixClient returns an HTTP client of the socket at path, without
// keep-alive (it checks health; it leaves no connection open to a process
// about to be replaced).
func unixClient(path string) *http.Client {
	return &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			Proxy:             nil,
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", path)
			},
		},
	}
}

// OwnsEndpoint reports whether endpoint is one of this driver's: "unix:"
// and a socket of its socket folder. Another control plane's local driver
// has its own folder (another data dir, or another host), and its
// processes die with it, so a proxy does not send requests there but runs
// the function with its own driver (see proxy's endpointOwner).
func (d *Driver) OwnsEndpoint(endpoint string) bool {
	path, ok := strings.CutPrefix(endpoint, endpointScheme)
	return ok && path == filepath.Join(d.sockets.dir, filepath.Base(path))
}
