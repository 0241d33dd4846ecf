package secrets_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/slessio/sless/store/pgtest"
)

// TestNoPlainValueOnDisk: a sealed value is nowhere in the server's data
// directory (table files, global, the WAL) once checkpointed, while a value
// written in the clear beside it, the control, is found: the scan sees what
// the test wrote. It needs the server's data directory readable here (a
// local server, the test run as root or as postgres); otherwise it skips.
func TestNoPlainValueOnDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v, b := setup(t, pgtest.Pool(t))
	var dataDir string
	if err := b.pool.QueryRow(ctx, `SHOW data_directory`).Scan(&dataDir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadDir(filepath.Join(dataDir, "pg_wal")); err != nil {
		t.Skipf("the server's data directory is not readable here (%v): a remote or containerised server", err)
	}

	secret, control := marker(t), marker(t)
	mustSeal(t, v, b.pool, b.ns, "s", 1, secret)
	mustSeal(t, v, b.pool, b.ns, "s", 2, secret+secret) // a second version, to be sure
	requireOpen(t, v, b.ns, "s", 1, secret)
	table := "plain_control_" + control[:8]
	mustExec(t, b.pool, `CREATE TABLE `+table+` (v text)`)
	mustExec(t, b.pool, `INSERT INTO `+table+` VALUES ($1)`, control)
	mustExec(t, b.pool, `CHECKPOINT`)

	found := map[string][]string{}
	var files int
	err := filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // removed while walked (a WAL segment recycled)
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		files++
		for _, m := range scanFile(t, path, secret, control) {
			found[m] = append(found[m], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found[control]) == 0 {
		t.Fatalf("the control value written in the clear is in none of %d files under %s: the scan is blind", files, dataDir)
	}
	if len(found[secret]) > 0 {
		t.Fatalf("the sealed value is in the clear in %v", found[secret])
	}
	t.Logf("%d files scanned; the control is in %v", files, found[control])
}

// marker returns 32 random hex characters.
func marker(tb testing.TB) string {
	tb.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// scanFile returns which of markers the file at path holds, reading it in
// chunks that overlap by a marker's length.
func scanFile(tb testing.TB, path string, markers ...string) []string {
	tb.Helper()
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	overlap := 0
	for _, m := range markers {
		overlap = max(overlap, len(m)-1)
	}
	hits := map[string]bool{}
	buf := make([]byte, 1<<20)
	kept := 0
	for {
		n, err := io.ReadFull(f, buf[kept:])
		window := buf[:kept+n]
		for _, m := range markers {
			if bytes.Contains(window, []byte(m)) {
				hits[m] = true
			}
		}
		if err != nil {
			if err != io.EOF && err != io.ErrUnexpectedEOF {
				tb.Fatalf("read %s: %v", path, err)
			}
			break
		}
		kept = min(overlap, len(window))
		copy(buf, window[len(window)-kept:])
	}
	var out []string
	for _, m := range markers {
		if hits[m] {
			out = append(out, m)
		}
	}
	return out
}
