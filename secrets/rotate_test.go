package secrets_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/secrets"
	"github.com/slessio/sless/store/pgtest"
)

// sealSome seals two versions of a secret in each of n new namespaces and
// returns them.
func sealSome(tb testing.TB, v *secrets.Vault, pool *pgxpool.Pool, n int) []string {
	tb.Helper()
	var nss []string
	for range n {
		ns := testutil.UniqueNS(tb)
		mustSeal(tb, v, pool, ns, "s", 1, ns+" one")
		mustSeal(tb, v, pool, ns, "s", 2, ns+" two")
		nss = append(nss, ns)
	}
	return nss
}

func requireAllOpen(tb testing.TB, v *secrets.Vault, nss []string) {
	tb.Helper()
	for _, ns := range nss {
		requireOpen(tb, v, ns, "s", 1, ns+" one")
		requireOpen(tb, v, ns, "s", 2, ns+" two")
	}
}

// kekIDs returns the distinct kek_id of every key row.
func kekIDs(tb testing.TB, pool *pgxpool.Pool) string {
	tb.Helper()
	var ids string
	if err := pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(DISTINCT kek_id, ','), '') FROM secret_keys`).Scan(&ids); err != nil {
		tb.Fatal(err)
	}
	return ids
}

// TestRotateKEK: after a rotation every data key is wrapped by the new KEK:
// a vault with only the new key opens everything, one with only the old key
// nothing, and readers with both keys kept working throughout.
func TestRotateKEK(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v, b := setup(t, pgtest.NewDB(t))
	nss := sealSome(t, v, b.pool, 20)
	next, nextLine := mustKeyring(t)

	// Readers during the rotation, each Open with a cold cache, as servers that
	// know both keys (from the key file) would be.
	both, err := secrets.ParseKeyring([]byte(nextLine + "\n" + b.line))
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var reads atomic.Int64
	var wg sync.WaitGroup
	readErrs := make(chan error, 4)
	for i := range 4 {
		wg.Go(func() {
			for j := i; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				ns := nss[j%len(nss)]
				got, err := secrets.NewVault(b.pool, both).Open(ctx, ns, "s", 1)
				if err != nil || string(got) != ns+" one" {
					readErrs <- fmt.Errorf("read during rotation: %q, %v", got, err)
					return
				}
				reads.Add(1)
			}
		})
	}

	n, err := v.RotateKEK(ctx, next)
	close(stop)
	wg.Wait()
	close(readErrs)
	for err := range readErrs {
		t.Error(err)
	}
	if err != nil || n != len(nss) {
		t.Fatalf("RotateKEK = %d, %v; want %d namespaces re-wrapped", n, err, len(nss))
	}
	t.Logf("%d reads during the rotation", reads.Load())
	if ids := kekIDs(t, b.pool); ids != next.ID() {
		t.Fatalf("key rows wrapped by %s, want only %s", ids, next.ID())
	}
	requireAllOpen(t, secrets.NewVault(b.pool, next), nss)
	requireAllOpen(t, v, nss)
	_, err = secrets.NewVault(b.pool, b.keys).Open(ctx, nss[0], "s", 1)
	requireInternal(t, err, next.ID())

	// The rotated vault wraps new keys under the new KEK; a second rotation has nothing to do.
	sealSome(t, v, b.pool, 1)
	if ids := kekIDs(t, b.pool); ids != next.ID() {
		t.Fatalf("after a new namespace, key rows wrapped by %s, want only %s", ids, next.ID())
	}
	if n, err := v.RotateKEK(ctx, next); n != 0 || err != nil {
		t.Fatalf("second RotateKEK = %d, %v; want 0", n, err)
	}
}

// TestRotateKEKWaitsForKeysBeingWrapped: a data key wrapped under the old
// KEK by a transaction still open when the sweep passed (a server that has
// not read the new key file yet) is caught: RotateKEK waits for that
// transaction and re-wraps the key before it returns.
func TestRotateKEKWaitsForKeysBeingWrapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v, b := setup(t, pgtest.NewDB(t))
	stale := secrets.NewVault(b.pool, b.keys) // a server still on the old key alone
	nss := sealSome(t, v, b.pool, 2)
	next, _ := mustKeyring(t)

	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	late := testutil.UniqueNS(t)
	if err := stale.Seal(ctx, tx, late, "s", 1, []byte(late+" one")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := v.RotateKEK(ctx, next)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("RotateKEK returned (%d, %v) while a key wrapped by the old KEK was uncommitted", r.n, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	mustSealTx(t, stale, tx, late, "s", 2, late+" two")
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.n != 3 {
		t.Fatalf("RotateKEK = %d, %v; want 3 (two namespaces, then the late one)", r.n, r.err)
	}
	if ids := kekIDs(t, b.pool); ids != next.ID() {
		t.Fatalf("key rows wrapped by %s, want only %s", ids, next.ID())
	}
	requireAllOpen(t, secrets.NewVault(b.pool, next), append(nss, late))
}

func mustSealTx(tb testing.TB, v *secrets.Vault, tx pgx.Tx, ns, name string, version int, value string) {
	tb.Helper()
	if err := v.Seal(context.Background(), tx, ns, name, version, []byte(value)); err != nil {
		tb.Fatal(err)
	}
}

// TestRotateKeyFile: the operator's rotation of a key file, while two
// servers follow it: one that has opened everything (its data keys cached)
// and one that has opened nothing. Both keep working, a new namespace is
// wrapped under the new key, and the file ends with the new key only.
func TestRotateKeyFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "secrets.key")
	oldLine := newKeyLine()
	if err := os.WriteFile(path, []byte("# operator key\n"+oldLine+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	server := secrets.NewVault(pool, mustLoad(t, path))
	idle := secrets.NewVault(pool, mustLoad(t, path))
	nss := sealSome(t, server, pool, 3)
	requireAllOpen(t, server, nss)

	r, err := secrets.RotateKeyFile(ctx, pool, path)
	if err != nil {
		t.Fatal(err)
	}
	oldID := fingerprint(t, oldLine)
	if r.Rewrapped != 3 || strings.Join(r.Old, ",") != oldID || r.New == "" || r.New == oldID {
		t.Fatalf("rotation report %+v; want 3 re-wrapped, old [%s], a new key", r, oldID)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file after rotation: %v, %v; want mode 0600", fi, err)
	}
	if ids := mustLoad(t, path).IDs(); strings.Join(ids, ",") != r.New {
		t.Fatalf("key file holds %v, want only the new key %s", ids, r.New)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d files in the key file's directory, want the key file only", len(entries))
	}
	if ids := kekIDs(t, pool); ids != r.New {
		t.Fatalf("key rows wrapped by %s, want %s", ids, r.New)
	}

	requireAllOpen(t, idle, nss)   // meets kek_id r.New: reads the file again
	requireAllOpen(t, server, nss) // its cached data keys did not change
	later := sealSome(t, server, pool, 1)
	if ids := kekIDs(t, pool); ids != r.New {
		t.Fatalf("a namespace made after the rotation by a running server: key rows wrapped by %s, want %s", ids, r.New)
	}
	requireAllOpen(t, secrets.NewVault(pool, mustLoad(t, path)), append(nss, later...))

	oldOnly, err := secrets.ParseKeyring([]byte(oldLine))
	if err != nil {
		t.Fatal(err)
	}
	_, err = secrets.NewVault(pool, oldOnly).Open(ctx, nss[0], "s", 1)
	requireInternal(t, err, r.New)

	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.RotateKeyFile(ctx, pool, path); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("rotating a key file of mode 0640: %v, want it refused", err)
	}
}

func mustLoad(tb testing.TB, path string) *secrets.Keyring {
	tb.Helper()
	k, err := secrets.LoadKeyringFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}
