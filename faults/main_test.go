package faults

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/slessio/sless/store/pglocal"
)

var fullFlag = flag.Bool("full", false, "the full form: a 30 s database outage, more load, longer runs (also SLESS_FAULTS=full)")

// form holds the sizes that differ between the short and the full form.
type form struct {
	name       string
	pgDown     time.Duration // how long PostgreSQL stays down
	clients    int           // load goroutines per kind of traffic
	loadBefore time.Duration // load before a fault
	loadAfter  time.Duration // load after recovery
}

var (
	shortForm = form{name: "short", pgDown: 4 * time.Second, clients: 4, loadBefore: 2 * time.Second, loadAfter: 2 * time.Second}
	fullForm  = form{name: "full", pgDown: 30 * time.Second, clients: 16, loadBefore: 10 * time.Second, loadAfter: 10 * time.Second}
)

// sizes returns the form of this run.
func sizes() form {
	if *fullFlag || os.Getenv("SLESS_FAULTS") == "full" {
		return fullForm
	}
	return shortForm
}

func TestMain(m *testing.M) {
	flag.Parse()
	start := time.Now()
	code := m.Run()
	printTable(os.Stdout, time.Since(start))
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// prerequisites fails t when something the suite runs is missing, saying
// what installs it.
func prerequisites(t *testing.T) {
	t.Helper()
	prereqOnce.Do(func() { prereqErr = checkPrerequisites() })
	if prereqErr != nil {
		t.Fatal(prereqErr)
	}
}

var (
	prereqOnce sync.Once
	prereqErr  error
)

func checkPrerequisites() error {
	var missing []string
	for _, p := range []struct{ bin, how string }{
		{"bwrap", "bubblewrap: `go tool task deps` installs it"},
		{"slirp4netns", "slirp4netns: `go tool task deps` installs it"},
		{"python3", "python3: install it from the distribution (the functions here are Python)"},
		{"go", "go: the toolchain builds the sless binary"},
	} {
		if _, err := exec.LookPath(p.bin); err != nil {
			missing = append(missing, p.how)
		}
	}
	if _, err := pglocalBinaries(); err != nil {
		missing = append(missing, "PostgreSQL's server binaries (initdb, postgres): no task installs them, `apt-get install postgresql` does ("+err.Error()+")")
	}
	if os.Geteuid() != 0 {
		missing = append(missing, "root: the suite mounts a tmpfs and runs the sandbox with a uid per tenant")
	}
	if len(missing) > 0 {
		return errors.New("the fault suite cannot run; missing:\n  " + strings.Join(missing, "\n  "))
	}
	return nil
}

// pglocalBinaries reports whether pglocal finds initdb and postgres where it
// looks (PATH, /usr/lib/postgresql/*/bin).
func pglocalBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", pglocal.ErrNoBinaries
}

// slessBinary builds cmd/sless once per run and returns its path
// (SLESS_FAULTS_BIN names a binary to use instead).
func slessBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if bin := os.Getenv("SLESS_FAULTS_BIN"); bin != "" {
			binPath = bin // a binary built elsewhere, e.g. of a release
			return
		}
		dir, err := os.MkdirTemp("", "sless-faults-bin-")
		if err != nil {
			binErr = err
			return
		}
		binDir = dir
		bin := filepath.Join(dir, "sless")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/sless")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/sless: %v\n%s", err, out)
			return
		}
		binPath = bin
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// row is one line of the table printed at the end: a promise and what the
// scenario measured.
type row struct {
	scenario, promise, result string
	ok                        bool
}

var (
	tableMu sync.Mutex
	table   []row
)

// promise records whether scenario kept promise, with the measured numbers,
// in the table, and fails t when it did not.
func promise(t *testing.T, scenario, what string, ok bool, format string, args ...any) {
	t.Helper()
	measured := fmt.Sprintf(format, args...)
	tableMu.Lock()
	table = append(table, row{scenario: scenario, promise: what, result: measured, ok: ok})
	tableMu.Unlock()
	if !ok {
		t.Errorf("%s: %s: FAIL: %s", scenario, what, measured)
	} else {
		t.Logf("%s: %s: pass: %s", scenario, what, measured)
	}
}

func printTable(w io.Writer, took time.Duration) {
	tableMu.Lock()
	defer tableMu.Unlock()
	if len(table) == 0 {
		return
	}
	f := sizes()
	fmt.Fprintf(w, "\nfault suite, %s form (database down %s, %d clients per load), %s:\n\n", f.name, f.pgDown, f.clients, took.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "scenario\tpromise\tresult")
	for _, r := range table {
		res := "pass"
		if !r.ok {
			res = "FAIL"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s: %s\n", r.scenario, r.promise, res, r.result)
	}
	_ = tw.Flush()
}
