package runtimes

import (
	"maps"
	"path/filepath"
	"strings"

	"github.com/slessio/sless/domain"
)

// The pool mode (ModePool) of the wrappers that have one (Description.Pool:
// Python and Node.js). A driver starts such a process before it knows which
// function it will run, so that a cold start skips the interpreter's own
// start and the wrapper's imports:
//
//  1. The process starts with SLESS_MODE=pool, its listening socket as
//     SLESS_LISTEN_FD and a connected stream socket as SLESS_CONTROL_FD (the
//     control socket); it imports what the server needs, writes PoolReady on
//     the control socket and waits.
//  2. The driver writes one Specialization, JSON on one line, and closes its
//     end. End of file instead ends the process (exit 0).
//  3. The wrapper closes the control socket, switches to Specialization's uid
//     and gid (no supplementary groups) and drops every capability it can
//     (Python all of them; Node.js cannot change its bounding set, so what it
//     started with stays there, useless under no_new_privs), checks in
//     /proc/self/status that no thread kept one, replaces its environment with
//     Specialization.Env, makes Specialization.Dir its working directory and
//     the first entry of its module path (Python adds PYTHONPATH's entries after
//     it), and goes on as server mode does: listens, loads the entrypoint,
//     serves. Any failure ends the process non-zero with a line "sless: ..."
//     on stderr.
//
// Nothing of a function is in the process before step 2, and the process
// serves only that function until it ends: a driver never hands it to another.

// EnvControlFD names, in pool mode, the descriptor of the control socket.
const EnvControlFD = "SLESS_CONTROL_FD"

// PoolReady is what a pool-mode process writes on its control socket once it
// waits for its Specialization.
const PoolReady = "ready\n"

// Specialization makes a pool-mode process the server of one function.
type Specialization struct {
	// Dir is the function's folder as the process sees it: its working
	// directory and the first entry of its module path.
	Dir string `json:"dir"`
	// Env is the whole environment of a server of the function (Command's
	// base and the caller's variables, with the paths the process sees):
	// the wrapper replaces its own with it.
	Env []string `json:"env"`
	// UID and GID are what the process switches to before it loads the
	// function; -1 keeps its own (a sandbox where every tenant has the
	// platform's uid).
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// InstallPool writes the runtime's wrapper into dir for processes in pool
// mode (Command(dir, ModePool)): dir holds nothing of a function. It returns
// EINVALID for a runtime without a pool mode.
func (r Runtime) InstallPool(dir string) error {
	if !r.desc.Pool {
		return domain.Errorf(domain.EINVALID, "runtime %s has no pool mode", r.desc.Name)
	}
	name := map[string]string{"python3.11": pythonWrapper, "nodejs20": nodeWrapper}[r.desc.Name]
	return copyWrapper(r.desc.Name, name, filepath.Join(dir, name))
}

// PoolServes reports whether a process of the runtime started in pool mode
// with the environment started serves a function as well as one started
// with env would: the variables the interpreter reads only when it starts
// (Python's PYTHON*, Node.js's NODE_OPTIONS and other NODE_* and UV_*, and
// for both the dynamic loader's, the C library's and the locale) have the
// same values in both. Python's PYTHONPATH is not one of them: the wrapper
// applies it. False for a runtime without a pool mode.
func (d Description) PoolServes(started, env []string) bool {
	if !d.Pool {
		return false
	}
	return maps.Equal(d.startValues(started), d.startValues(env))
}

// startValues returns the variables of env the runtime reads only when it
// starts; the last of a name wins, as exec's does.
func (d Description) startValues(env []string) map[string]string {
	out := map[string]string{}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		if readAtStart(name) || d.startVar != nil && d.startVar(name) {
			out[name] = value
		}
	}
	return out
}

// readAtStart says whether any process reads the variable name when it
// starts only: the dynamic loader's, the C library's, OpenSSL's, the locale.
func readAtStart(name string) bool {
	for _, prefix := range []string{"LD_", "MALLOC_", "LC_", "OPENSSL_", "SSL_CERT_"} {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return name == "GLIBC_TUNABLES" || name == "LANG" || name == "LANGUAGE"
}
