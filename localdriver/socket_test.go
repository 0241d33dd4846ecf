package localdriver_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/slessio/sless/localdriver"
)

// TestOwnsEndpoint: a driver's own endpoints are the sockets of its socket
// folder, including one under the system's temporary folder when its data
// dir is too long for socket paths; another data dir's sockets, http
// endpoints and paths below or beside the folder are not its own.
func TestOwnsEndpoint(t *testing.T) {
	t.Parallel()
	a := setup(t, localdriver.Options{})
	b, bDir, _ := newDriver(t, localdriver.Options{})
	long, longDir, _ := newDriver(t, localdriver.Options{Dir: filepath.Join(t.TempDir(), strings.Repeat("d", 100))})

	w := a.mustBuild(t, ns, "owned", 1, pyConfig(nil), pyHello)
	endpoint := a.mustDeploy(t, w)
	if !a.d.OwnsEndpoint(endpoint) {
		t.Fatalf("driver a does not own its endpoint %s", endpoint)
	}
	if b.OwnsEndpoint(endpoint) {
		t.Fatalf("driver b (data dir %s) owns driver a's endpoint %s", bDir, endpoint)
	}
	l := env{d: long, dir: longDir, store: a.store}
	inLong := l.mustDeploy(t, l.mustBuild(t, ns, "owned", 1, pyConfig(nil), pyHello))
	if !long.OwnsEndpoint(inLong) || a.d.OwnsEndpoint(inLong) {
		t.Fatalf("the endpoint %s of a driver with a long data dir: owned by it %v, by a %v",
			inLong, long.OwnsEndpoint(inLong), a.d.OwnsEndpoint(inLong))
	}

	sock := strings.TrimPrefix(endpoint, "unix:")
	dir := filepath.Dir(sock)
	for _, other := range []string{
		"",
		sock,                    // no scheme
		"http://127.0.0.1:8080", // not a socket
		"unix:" + dir,           // the folder itself
		"unix:" + dir + "/",     // the folder itself
		"unix:" + dir + "/../" + filepath.Base(dir) + "/" + filepath.Base(sock), // not clean
		"unix:" + dir + "/x/y.sock",                                   // below it
		"unix:" + filepath.Join(filepath.Dir(dir), "other", "x.sock"), // beside it
		"unix:" + filepath.Join(bDir, "sock", filepath.Base(sock)),    // the same name in another data dir
		"unix:sock/" + filepath.Base(sock),                            // relative
	} {
		if a.d.OwnsEndpoint(other) {
			t.Errorf("driver a owns %q", other)
		}
	}
}
