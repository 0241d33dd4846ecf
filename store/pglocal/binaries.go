package pglocal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrNoBinaries is returned (wrapped) by Start when no usable PostgreSQL binaries
// are installed; its message says how to provide a database instead.
var ErrNoBinaries = errors.New("no PostgreSQL server binaries (initdb, postgres) found on PATH or under /usr/lib/postgresql/*/bin; " +
	"install PostgreSQL (e.g. `apt-get install postgresql`, `brew install postgresql@16`), " +
	"or point sless at a running server with DATABASE_URL (tests: SLESS_TEST_DATABASE_URL)")

// distroRoot is where Debian and Ubuntu install one directory per major version.
const distroRoot = "/usr/lib/postgresql"

// binaries is one PostgreSQL installation: a directory holding initdb and postgres.
type binaries struct {
	dir   string
	major int
}

func (b binaries) path(name string) string { return filepath.Join(b.dir, name) }

// findBinaries picks the installation to run. An explicit dir wins; otherwise the
// candidates are the directory of initdb on PATH, then /usr/lib/postgresql/*/bin,
// newest first. When the data directory already exists (wantMajor > 0) only a
// matching major version can open it, so the first match is chosen.
func findBinaries(ctx context.Context, dir string, wantMajor int) (binaries, error) {
	var dirs []string
	if dir != "" {
		dirs = []string{dir}
	} else {
		dirs = candidateDirs()
	}
	var found []binaries
	for _, d := range dirs {
		b, err := probe(ctx, d)
		if err != nil {
			continue
		}
		if wantMajor == 0 || b.major == wantMajor {
			return b, nil
		}
		found = append(found, b)
	}
	if len(found) > 0 {
		return binaries{}, fmt.Errorf("the data directory was created by PostgreSQL %d but only version %d binaries were found (%s): "+
			"install PostgreSQL %d or use another data directory", wantMajor, found[0].major, found[0].dir, wantMajor)
	}
	if dir != "" {
		return binaries{}, fmt.Errorf("%s: %w", dir, ErrNoBinaries)
	}
	return binaries{}, ErrNoBinaries
}

// candidateDirs lists the directories that may hold initdb and postgres, in
// order of preference, without duplicates.
func candidateDirs() []string {
	var dirs []string
	add := func(d string) {
		if d != "" && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		add(filepath.Dir(p))
		// A symlink on PATH (/usr/local/bin/initdb) may not have postgres beside it.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			add(filepath.Dir(real))
		}
	}
	entries, _ := os.ReadDir(distroRoot)
	type versioned struct {
		dir     string
		version float64
	}
	var vs []versioned
	for _, e := range entries {
		v, err := strconv.ParseFloat(e.Name(), 64)
		if err != nil {
			continue
		}
		vs = append(vs, versioned{filepath.Join(distroRoot, e.Name(), "bin"), v})
	}
	slices.SortFunc(vs, func(a, b versioned) int {
		switch {
		case a.version > b.version:
			return -1
		case a.version < b.version:
			return 1
		}
		return 0
	})
	for _, v := range vs {
		add(v.dir)
	}
	return dirs
}

var versionRE = regexp.MustCompile(`\(PostgreSQL\) (\d+)`)

// probe checks that dir holds initdb and postgres and asks postgres its version.
func probe(ctx context.Context, dir string) (binaries, error) {
	for _, name := range []string{"initdb", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			return binaries{}, fmt.Errorf("%s: no executable %s", dir, name)
		}
	}
	out, err := exec.CommandContext(ctx, filepath.Join(dir, "postgres"), "--version").Output()
	if err != nil {
		return binaries{}, fmt.Errorf("%s/postgres --version: %w", dir, err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return binaries{}, fmt.Errorf("%s/postgres --version: unexpected output %q", dir, strings.TrimSpace(string(out)))
	}
	major, _ := strconv.Atoi(m[1])
	return binaries{dir: dir, major: major}, nil
}

// dataDirMajor returns the major version recorded in an initialised data
// directory, or 0 when dir holds no cluster yet.
func dataDirMajor(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "PG_VERSION"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	major, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s/PG_VERSION: %q is not a version", dir, strings.TrimSpace(string(b)))
	}
	return major, nil
}
