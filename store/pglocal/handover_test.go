package pglocal

import (
	"os"
	"path/filepath"
	"testing"
)

// The old owner of a cluster (the shared postgres user, maybe taken over)
// wrote everything in it; handing the cluster over, as root, must give it
// nothing outside the cluster.
func TestAdoptLeavesAloneWhatTheOldOwnerPlanted(t *testing.T) {
	t.Parallel()
	skipUnlessRoot(t)
	const oldUID, newUID, otherUID = 1_000_000_201, 1_000_000_202, 1_000_000_203
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	dataDir := filepath.Join(base, "data")
	mustMkdir(t, outside, 0o755, 0)
	victim := mustFile(t, filepath.Join(outside, "victim"), 0o600, 0)
	theirs := mustFile(t, filepath.Join(outside, "theirs"), 0o600, otherUID)

	mustMkdir(t, dataDir, 0o755, oldUID)
	mustFile(t, filepath.Join(dataDir, "PG_VERSION"), 0o644, oldUID)
	mustFile(t, filepath.Join(dataDir, passwordFile), 0o600, 0)
	mustFile(t, filepath.Join(dataDir, logFile), 0o600, 0)
	mustMkdir(t, filepath.Join(dataDir, "base"), 0o777, oldUID)
	mustMkdir(t, filepath.Join(dataDir, "base", "1"), 0o755, oldUID)
	table := mustFile(t, filepath.Join(dataDir, "base", "1", "1259"), 0o666, oldUID)
	mustMkdir(t, filepath.Join(dataDir, "pg_wal"), 0o700, oldUID)
	mustFile(t, filepath.Join(dataDir, "pg_wal", "000000010000000000000001"), 0o600, oldUID)
	planted := map[string]string{ // links the old owner left, each to something outside
		"pg_wal/abs":       victim,
		"pg_wal/rel":       "../../outside/victim",
		"pg_tblspc":        outside,
		"base/1/theirs-hl": "",
	}
	for name, target := range planted {
		p := filepath.Join(dataDir, name)
		if target == "" {
			if err := os.Link(theirs, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(p, oldUID, oldUID); err != nil {
			t.Fatal(err)
		}
	}

	acct := account{name: "new", uid: newUID, gid: newUID, other: true}
	from, handed, err := acct.adopt(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if from != oldUID || !handed {
		t.Fatalf("adopt = %d, %v, want %d, true", from, handed, oldUID)
	}
	mustMode(t, dataDir, 0o700, newUID)
	mustMode(t, filepath.Join(dataDir, "PG_VERSION"), 0o600, newUID)
	mustMode(t, filepath.Join(dataDir, "base"), 0o700, newUID)
	mustMode(t, filepath.Join(dataDir, "base", "1"), 0o700, newUID)
	mustMode(t, table, 0o600, newUID)
	mustMode(t, filepath.Join(dataDir, "pg_wal", "000000010000000000000001"), 0o600, newUID)
	mustMode(t, filepath.Join(dataDir, passwordFile), 0o600, 0)
	mustMode(t, filepath.Join(dataDir, logFile), 0o600, 0)
	mustMode(t, outside, 0o755, 0)
	mustMode(t, victim, 0o600, 0)
	mustMode(t, theirs, 0o600, otherUID)

	// Interrupted after the walk had begun: the data directory is still root's,
	// so the next start finishes the job.
	if err := os.Chown(dataDir, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(table, oldUID, oldUID); err != nil {
		t.Fatal(err)
	}
	if _, handed, err := acct.adopt(dataDir); err != nil || !handed {
		t.Fatalf("adopt after an interruption = %v, %v, want a hand-over", handed, err)
	}
	mustMode(t, dataDir, 0o700, newUID)
	mustMode(t, table, 0o600, newUID)

	// Once the account's, the cluster is not walked again.
	if _, handed, err := acct.adopt(dataDir); err != nil || handed {
		t.Fatalf("adopt of an adopted cluster = %v, %v, want nothing to do", handed, err)
	}
}

func mustMkdir(t *testing.T, path string, perm os.FileMode, uid int) {
	t.Helper()
	if err := os.Mkdir(path, perm); err != nil {
		t.Fatal(err)
	}
	mustOwn(t, path, perm, uid)
}

func mustFile(t *testing.T, path string, perm os.FileMode, uid int) string {
	t.Helper()
	if err := os.WriteFile(path, []byte("x\n"), perm); err != nil {
		t.Fatal(err)
	}
	mustOwn(t, path, perm, uid)
	return path
}

func mustOwn(t *testing.T, path string, perm os.FileMode, uid int) {
	t.Helper()
	if err := os.Chown(path, uid, uid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // past the umask
		t.Fatal(err)
	}
}
