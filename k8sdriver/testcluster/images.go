package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// The names of the images the node has, as a real cluster names them; the
// node's containerd and the builds' kaniko find them in the node's registry
// (Node.Registry) under these names. An image of another name fails to pull
// at once.
const (
	// PauseImage is the pod sandbox image containerd's CRI runs.
	PauseImage = "registry.k8s.io/pause:3.10"
	// KanikoImage is the builder image: k8sdriver's DefaultKanikoImage.
	KanikoImage = "gcr.io/kaniko-project/executor:v1.23.2"
)

// RuntimeImage is the base image of a runtime as sless names it
// (httpapi.DefaultBaseImage): what a function's generated Dockerfile starts FROM.
func RuntimeImage(runtime string) string { return "sless/runtime-" + runtime + ":latest" }

// Runtimes are the runtimes whose base images the node has.
var Runtimes = []string{"python3.11", "nodejs20", "go1.23"}

// sandboxUser is the user the runtime images create (runtimes/*/Dockerfile).
var sandboxUser = owner{10001, 10001}

// pauseImage packs bin/k8s-<Version>/pause (testcluster/pause).
func pauseImage(bins Binaries) (v1.Image, error) {
	l := newLayer()
	l.hostFileAt(bins.Pause, "/pause")
	return imageOf(l, v1.Config{Entrypoint: []string{"/pause"}})
}

// kanikoImage packs the executor as kaniko's own image does: /kaniko with the
// executor and the CA certificates, DOCKER_CONFIG in /kaniko/.docker.
func kanikoImage(bins Binaries) (v1.Image, error) {
	l := newLayer()
	l.hostFileAt(bins.Kaniko, "/kaniko/executor")
	l.hostFileAt("/etc/ssl/certs/ca-certificates.crt", "/kaniko/ssl/certs/ca-certificates.crt")
	l.file("/etc/nsswitch.conf", []byte("hosts: files dns\n"), 0o644, rootOwner)
	l.dir("/kaniko/.docker", 0o755, rootOwner)
	l.dir("/workspace", 0o755, rootOwner)
	return imageOf(l, v1.Config{
		Entrypoint: []string{"/kaniko/executor"},
		WorkingDir: "/workspace",
		Env: []string{"PATH=/usr/local/bin:/kaniko", "HOME=/root", "USER=root",
			"SSL_CERT_DIR=/kaniko/ssl/certs", "DOCKER_CONFIG=/kaniko/.docker/"},
	})
}

// runtimeImage builds the base image of a runtime from its Dockerfile in
// runtimes/<runtime>/ and this machine's interpreter: the Dockerfile's ENV,
// WORKDIR, USER, EXPOSE, CMD, COPY and ONBUILD lines are followed as they
// are; its FROM (an image of the internet) is replaced by the machine's
// interpreter or toolchain with the libraries it needs, and its RUN lines
// (a package install and useradd) by what they leave behind. The Dockerfile
// stays what production images are built from.
func runtimeImage(repo, rt string) (v1.Image, error) {
	dir := filepath.Join(repo, "runtimes", rt)
	df, err := readDockerfile(filepath.Join(dir, "Dockerfile"))
	if err != nil {
		return nil, err
	}
	l := newLayer()
	l.file("/etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\nsless:x:10001:10001::/nonexistent:/usr/sbin/nologin\n"), 0o644, rootOwner)
	l.file("/etc/group", []byte("root:x:0:\nsless:x:10001:\n"), 0o644, rootOwner)
	l.dir("/tmp", 0o777|fs.ModeSticky, rootOwner)
	l.dir("/root", 0o755, rootOwner)
	// RUN steps execute in /bin/sh; the Go runtime's ONBUILD step also uses
	// grep, sed and basename.
	for _, p := range []string{"/bin/sh", "/usr/bin/env", "/usr/bin/grep", "/usr/bin/sed", "/usr/bin/basename", "/usr/bin/cat", "/usr/bin/ls"} {
		l.program(p)
	}
	env := df.env
	switch rt {
	case "python3.11":
		env, err = pythonRoot(l, env)
		l.dir("/app/function", 0o755, rootOwner)
		l.dir("/app/python-deps", 0o755, sandboxUser)
	case "nodejs20":
		env, err = nodeRoot(l, env)
		l.dir("/app/function", 0o755, sandboxUser)
	case "go1.23":
		env, err = goRoot(l, env)
		l.dir("/app", 0o755, sandboxUser)
		l.dir("/app/function", 0o755, sandboxUser)
		l.dir("/app/wrapper", 0o755, rootOwner)
	default:
		return nil, fmt.Errorf("no base image recipe for runtime %s", rt)
	}
	if err != nil {
		return nil, err
	}
	for _, c := range df.copies {
		for _, src := range c.sources {
			data, err := os.ReadFile(filepath.Join(dir, src))
			if err != nil {
				return nil, err
			}
			dest := c.dest
			if strings.HasSuffix(dest, "/") {
				dest = path.Join(dest, src)
			}
			l.file(dest, data, 0o644, rootOwner)
		}
	}
	if df.workdir != "" {
		l.dir(df.workdir, 0o755, rootOwner)
	}
	cfg := v1.Config{Env: env, WorkingDir: df.workdir, User: df.user, Cmd: df.cmd, OnBuild: df.onbuild}
	if len(df.expose) > 0 {
		cfg.ExposedPorts = map[string]struct{}{}
		for _, p := range df.expose {
			cfg.ExposedPorts[p+"/tcp"] = struct{}{}
		}
	}
	return imageOf(l, cfg)
}

// pythonRoot adds the machine's python3 (its prefix, without the test suite,
// caches and other installed packages but pip), the PostgreSQL driver the
// Dockerfile installs (Debian's python3-psycopg2), and python, python3 and
// pip on PATH.
func pythonRoot(l *layer, env []string) ([]string, error) {
	out, err := exec.Command("python3", "-c", "import sys; print(sys.prefix); print('%d.%d' % sys.version_info[:2])").Output()
	if err != nil {
		return nil, fmt.Errorf("python3: %w", err)
	}
	lines := strings.Fields(string(out))
	prefix, version := lines[0], lines[1]
	if version != "3.11" {
		return nil, fmt.Errorf("python3 on PATH is %s, the runtime needs 3.11", version)
	}
	lib := "lib/python" + version
	site := lib + "/site-packages"
	l.tree(prefix, prefix, func(rel string, d fs.DirEntry) bool {
		switch {
		case d.Name() == "__pycache__" || d.Name() == "test" || d.Name() == "tests" || d.Name() == "idlelib" || d.Name() == "tkinter":
			return true
		case rel == "include" || rel == "share" || strings.HasPrefix(rel, lib+"/config-"):
			return true
		case strings.HasPrefix(rel, site+"/") && strings.Count(rel, "/") == 3:
			return !strings.HasPrefix(d.Name(), "pip")
		}
		return false
	})
	if pg := "/usr/lib/python3/dist-packages/psycopg2"; exists(pg) {
		l.tree(pg, path.Join(prefix, site, "psycopg2"), func(_ string, d fs.DirEntry) bool { return d.Name() == "__pycache__" })
	}
	for name, target := range map[string]string{"python": "python3", "python3": "python3", "pip": "pip3"} {
		l.link("/usr/local/bin/"+name, path.Join(prefix, "bin", target))
	}
	return withPath(env, "/usr/local/bin:/usr/bin:/bin"), nil
}

// nodeRoot adds the machine's node and npm.
func nodeRoot(l *layer, env []string) ([]string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, err
	}
	l.program(node)
	npm, err := filepath.EvalSymlinks("/usr/lib/node_modules/npm")
	if err != nil {
		return nil, fmt.Errorf("npm: %w", err)
	}
	l.tree(npm, "/usr/lib/node_modules/npm", nil)
	l.link("/usr/local/bin/npm", "/usr/lib/node_modules/npm/bin/npm-cli.js")
	if filepath.Dir(node) != "/usr/bin" {
		l.link("/usr/local/bin/node", node)
	}
	return withPath(env, "/usr/local/bin:/usr/bin:/bin"), nil
}

// goRoot adds the machine's Go toolchain (without its tests and the
// sources of its own commands) as GOROOT, go on PATH.
func goRoot(l *layer, env []string) ([]string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOROOT: %w", err)
	}
	root := strings.TrimSpace(string(out))
	l.tree(root, root, func(rel string, d fs.DirEntry) bool {
		switch {
		case rel == "test" || rel == "api" || rel == "doc" || rel == "misc" || rel == "src/cmd" || rel == "lib/wasm" || rel == "pkg/obj":
			return true
		case d.Name() == "testdata" || strings.HasSuffix(d.Name(), "_test.go"):
			return true
		}
		return false
	})
	l.link("/usr/local/bin/go", path.Join(root, "bin", "go"))
	return withPath(env, "/usr/local/bin:/usr/bin:/bin"), nil
}

// withPath sets PATH in env unless it is set.
func withPath(env []string, p string) []string {
	for _, e := range env {
		if strings.HasPrefix(e, "PATH=") {
			return env
		}
	}
	return append([]string{"PATH=" + p}, env...)
}

func imageOf(l *layer, cfg v1.Config) (v1.Image, error) {
	ly, err := l.image()
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, ly)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Config = runtime.GOARCH, "linux", cfg
	return mutate.ConfigFile(img, cf)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// dockerfile is what runtimeImage follows of a runtime's Dockerfile.
type dockerfile struct {
	env     []string
	workdir string
	user    string
	cmd     []string
	expose  []string
	copies  []dockerCopy
	onbuild []string
}

type dockerCopy struct {
	sources []string
	dest    string
}

// readDockerfile reads the instructions runtimeImage follows; continuation
// lines are joined and comments dropped. Only the forms the runtimes'
// Dockerfiles use are understood (ENV k=v ..., CMD in JSON form, COPY of
// files of the runtime's folder).
func readDockerfile(p string) (dockerfile, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return dockerfile{}, err
	}
	var df dockerfile
	var logical []string
	cur := ""
	for _, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "#") && cur == "" || t == "" && cur == "" {
			continue
		}
		if strings.HasSuffix(t, "\\") {
			cur += strings.TrimSuffix(t, "\\") + " "
			continue
		}
		logical = append(logical, cur+t)
		cur = ""
	}
	for _, line := range logical {
		word, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(word) {
		case "FROM", "RUN":
		case "ENV":
			for _, kv := range strings.Fields(rest) {
				if !strings.Contains(kv, "=") {
					return df, fmt.Errorf("%s: ENV %q: only the k=v form is understood", p, rest)
				}
				df.env = append(df.env, kv)
			}
		case "WORKDIR":
			df.workdir = rest
		case "USER":
			df.user = rest
		case "EXPOSE":
			df.expose = append(df.expose, strings.Fields(rest)...)
		case "CMD":
			if err := json.Unmarshal([]byte(rest), &df.cmd); err != nil {
				return df, fmt.Errorf("%s: CMD must be in JSON form: %v", p, err)
			}
		case "COPY":
			f := strings.Fields(rest)
			if len(f) < 2 || strings.HasPrefix(f[0], "--") {
				return df, fmt.Errorf("%s: COPY %q: only plain file copies are understood", p, rest)
			}
			df.copies = append(df.copies, dockerCopy{sources: f[:len(f)-1], dest: f[len(f)-1]})
		case "ONBUILD":
			df.onbuild = append(df.onbuild, rest)
		default:
			return df, fmt.Errorf("%s: %s is not understood by the test cluster's image builder", p, word)
		}
	}
	return df, nil
}

// Program describes an image made of one program of this machine, e.g. a
// statically built sless for the control plane's image.
type Program struct {
	// Path is the program on this machine; At is where the image has it.
	Path, At string
	// Entrypoint and Cmd start it; User runs it ("65532:65532").
	Entrypoint, Cmd []string
	User            string
}

// PushProgram builds the image of p (with /etc/passwd naming its user, and
// /tmp) and stores it in the node's registry under ref.
func (n *Node) PushProgram(ctx context.Context, ref string, p Program) error {
	l := newLayer()
	l.hostFileAt(p.Path, p.At)
	uid, _, _ := strings.Cut(p.User, ":")
	l.file("/etc/passwd", []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:"+uid+":"+uid+"::/home/nonroot:/sbin/nologin\n"), 0o644, rootOwner)
	l.dir("/tmp", 0o777|fs.ModeSticky, rootOwner)
	img, err := imageOf(l, v1.Config{Entrypoint: p.Entrypoint, Cmd: p.Cmd, User: p.User, WorkingDir: "/"})
	if err != nil {
		return err
	}
	return n.Registry.Push(ctx, ref, img)
}
