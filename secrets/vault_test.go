package secrets_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/secrets"
	"github.com/slessio/sless/store/pgtest"
)

func TestSealOpenRoundTrip(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	big := bytes.Repeat([]byte{0, 0xff, 'x'}, secrets.MaxValueBytes/3+1)[:secrets.MaxValueBytes]

	mustSeal(t, v, b.pool, b.ns, "db-password", 1, "hunter2")
	mustSeal(t, v, b.pool, b.ns, "db-password", 2, "correct horse")
	mustSeal(t, v, b.pool, b.ns, "empty", 1, "")
	mustSeal(t, v, b.pool, b.ns, "big", 1, string(big))

	requireOpen(t, v, b.ns, "db-password", 1, "hunter2")
	requireOpen(t, v, b.ns, "db-password", 2, "correct horse")
	requireOpen(t, v, b.ns, "empty", 1, "")
	requireOpen(t, v, b.ns, "big", 1, string(big))
	// A vault with the same keyring and a cold cache unwraps the key from its row.
	requireOpen(t, secrets.NewVault(b.pool, b.keys), b.ns, "db-password", 2, "correct horse")

	if n := count(t, b.pool, `SELECT count(*) FROM secret_keys WHERE namespace = $1`, b.ns); n != 1 {
		t.Fatalf("%d key rows for the namespace, want 1", n)
	}
	if n := count(t, b.pool, `SELECT count(DISTINCT key_id) FROM secret_values WHERE namespace = $1`, b.ns); n != 1 {
		t.Fatalf("the namespace's values are under %d data keys, want 1", n)
	}
	var sealed []byte
	if err := b.pool.QueryRow(context.Background(), `SELECT sealed FROM secret_values WHERE namespace = $1 AND name = 'db-password' AND version = 1`, b.ns).Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("hunter2")) || len(sealed) != 12+len("hunter2")+16 {
		t.Fatalf("sealed value %x: want nonce, ciphertext and tag, no plain text", sealed)
	}
}

func TestSealRefusesBadInput(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	for _, c := range []struct {
		ns, name string
		version  int
		value    []byte
		code     string
		msg      string
	}{
		{"", "s", 1, []byte("x"), domain.EINVALID, "namespace"},
		{b.ns, "", 1, []byte("x"), domain.EINVALID, "name"},
		{b.ns, "s", 0, []byte("x"), domain.EINVALID, "version"},
		{b.ns, "s", 1, nil, domain.EINVALID, "value"},
		{b.ns, "s", 1, make([]byte, secrets.MaxValueBytes+1), domain.ETOOLARGE, "64 KiB"},
	} {
		testutil.RequireCode(t, seal(v, b.pool, c.ns, c.name, c.version, c.value), c.code, c.msg)
	}
	mustSeal(t, v, b.pool, b.ns, "s", 1, "first")
	testutil.RequireCode(t, seal(v, b.pool, b.ns, "s", 1, []byte("second")), domain.ECONFLICT, `"s" version 1`)
	requireOpen(t, v, b.ns, "s", 1, "first")
}

func TestOpenMissingIsNotFound(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	_, err := v.Open(context.Background(), b.ns, "nope", 3)
	testutil.RequireCode(t, err, domain.ENOTFOUND, `secret "nope" version 3 no longer exists`)
}

// TestSealedValueOpensOnlyInItsRow: a sealed value or a wrapped data key
// copied into another row (another name, version or namespace) does not
// open: the additional data binds each to its place.
func TestSealedValueOpensOnlyInItsRow(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	other := testutil.UniqueNS(t)
	mustSeal(t, v, b.pool, b.ns, "a", 1, "value of a")
	mustSeal(t, v, b.pool, b.ns, "a", 2, "a, second")
	mustSeal(t, v, b.pool, b.ns, "b", 1, "value of b")
	mustSeal(t, v, b.pool, other, "a", 1, "a elsewhere")

	move := func(ns, name string, version int) {
		t.Helper()
		mustExec(t, b.pool, `UPDATE secret_values SET sealed = (SELECT sealed FROM secret_values WHERE namespace = $1 AND name = 'a' AND version = 1),
			key_id = (SELECT key_id FROM secret_values WHERE namespace = $1 AND name = 'a' AND version = 1)
			WHERE namespace = $2 AND name = $3 AND version = $4`, b.ns, ns, name, version)
	}
	for _, to := range []struct {
		ns, name string
		version  int
	}{{b.ns, "b", 1}, {b.ns, "a", 2}, {other, "a", 1}} {
		move(to.ns, to.name, to.version)
		for _, vault := range []*secrets.Vault{v, secrets.NewVault(b.pool, b.keys)} {
			_, err := vault.Open(context.Background(), to.ns, to.name, to.version)
			if domain.ErrorCode(err) == "" {
				t.Fatalf("a's version 1 moved to %s %s v%d opened", to.ns, to.name, to.version)
			}
		}
	}
	requireOpen(t, v, b.ns, "a", 1, "value of a")

	// The wrapped data key of one namespace put in another's key row.
	third := testutil.UniqueNS(t)
	mustSeal(t, v, b.pool, third, "c", 1, "value of c")
	mustExec(t, b.pool, `UPDATE secret_keys SET wrapped = (SELECT wrapped FROM secret_keys WHERE namespace = $1),
		key_id = (SELECT key_id FROM secret_keys WHERE namespace = $1) WHERE namespace = $2`, b.ns, third)
	mustExec(t, b.pool, `UPDATE secret_values SET key_id = (SELECT key_id FROM secret_keys WHERE namespace = $1) WHERE namespace = $1`, third)
	_, err := secrets.NewVault(b.pool, b.keys).Open(context.Background(), third, "c", 1)
	requireInternal(t, err, "does not unwrap")
}

// TestOpenWithoutTheKEKNamesIt: a vault whose keyring lacks the KEK that
// wrapped a namespace's data key answers EINTERNAL naming that kek_id, and
// nothing of either key.
func TestOpenWithoutTheKEKNamesIt(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	mustSeal(t, v, b.pool, b.ns, "s", 1, "v")
	stranger, line := mustKeyring(t)
	_, err := secrets.NewVault(b.pool, stranger).Open(context.Background(), b.ns, "s", 1)
	requireInternal(t, err, b.keys.ID(), stranger.ID())
	if strings.Contains(err.Error(), line) {
		t.Fatalf("error %v shows a key", err)
	}
}

// TestShredReKeysTheNamespace: after a Shred the deleted secret's rows are
// gone, the namespace has a new data key under which the other secrets
// still open, no row holds the old key, and the deleted ciphertext, put
// back as an old backup would have it, opens under neither the old key_id
// (no key row) nor the new one.
func TestShredReKeysTheNamespace(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	ctx := context.Background()
	mustSeal(t, v, b.pool, b.ns, "gone", 1, "deleted value 1")
	mustSeal(t, v, b.pool, b.ns, "gone", 2, "deleted value 2")
	mustSeal(t, v, b.pool, b.ns, "kept", 1, "kept value 1")
	mustSeal(t, v, b.pool, b.ns, "kept", 2, "kept value 2")
	requireOpen(t, v, b.ns, "gone", 2, "deleted value 2") // the old key is cached now

	var oldKey uuid.UUID
	var oldKEK string
	var oldWrapped, captured []byte
	if err := b.pool.QueryRow(ctx, `SELECT key_id, kek_id, wrapped FROM secret_keys WHERE namespace = $1`, b.ns).Scan(&oldKey, &oldKEK, &oldWrapped); err != nil {
		t.Fatal(err)
	}
	if err := b.pool.QueryRow(ctx, `SELECT sealed FROM secret_values WHERE namespace = $1 AND name = 'gone' AND version = 2`, b.ns).Scan(&captured); err != nil {
		t.Fatal(err)
	}

	mustShred(t, v, b.pool, b.ns, "gone")

	for _, version := range []int{1, 2} {
		_, err := v.Open(ctx, b.ns, "gone", version)
		testutil.RequireCode(t, err, domain.ENOTFOUND, fmt.Sprintf(`secret "gone" version %d no longer exists`, version))
	}
	requireOpen(t, v, b.ns, "kept", 1, "kept value 1")
	requireOpen(t, secrets.NewVault(b.pool, b.keys), b.ns, "kept", 2, "kept value 2")
	if n := count(t, b.pool, `SELECT count(*) FROM secret_keys WHERE key_id = $1 OR wrapped = $2`, oldKey, oldWrapped); n != 0 {
		t.Fatalf("%d key rows still hold the old data key", n)
	}
	if n := count(t, b.pool, `SELECT count(*) FROM secret_values WHERE key_id = $1`, oldKey); n != 0 {
		t.Fatalf("%d values still sealed under the old data key", n)
	}

	// The captured ciphertext restored: under its own key_id (which no key row
	// holds any more), and under the namespace's new one.
	for _, fresh := range []bool{false, true} {
		vault := v
		if fresh {
			vault = secrets.NewVault(b.pool, b.keys)
		}
		mustExec(t, b.pool, `INSERT INTO secret_values (namespace, name, version, key_id, sealed) VALUES ($1, 'gone', 2, $2, $3)`, b.ns, oldKey, captured)
		_, err := vault.Open(ctx, b.ns, "gone", 2)
		testutil.RequireCode(t, err, domain.EINTERNAL)
		mustExec(t, b.pool, `UPDATE secret_values SET key_id = (SELECT key_id FROM secret_keys WHERE namespace = $1) WHERE namespace = $1 AND name = 'gone'`, b.ns)
		_, err = vault.Open(ctx, b.ns, "gone", 2)
		testutil.RequireCode(t, err, domain.EINTERNAL)
		mustExec(t, b.pool, `DELETE FROM secret_values WHERE namespace = $1 AND name = 'gone'`, b.ns)
	}

	// What stays true, as the package doc says: an old backup (the key row and
	// the ciphertext as they were) opens with the KEK that wrapped it, and
	// with no other: destroying that KEK after a rotation is what ends it.
	backup := pgtest.NewDB(t)
	mustExec(t, backup, `INSERT INTO secret_keys (namespace, key_id, kek_id, wrapped) VALUES ($1, $2, $3, $4)`, b.ns, oldKey, oldKEK, oldWrapped)
	mustExec(t, backup, `INSERT INTO secret_values (namespace, name, version, key_id, sealed) VALUES ($1, 'gone', 2, $2, $3)`, b.ns, oldKey, captured)
	requireOpen(t, secrets.NewVault(backup, b.keys), b.ns, "gone", 2, "deleted value 2")
	rotated, _ := mustKeyring(t)
	_, err := secrets.NewVault(backup, rotated).Open(ctx, b.ns, "gone", 2)
	requireInternal(t, err, oldKEK)
}

// TestShredLastSecretLeavesNoKey: the namespace's last secret deleted, the
// namespace has no key row; its next secret gets a new key.
func TestShredLastSecretLeavesNoKey(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	mustSeal(t, v, b.pool, b.ns, "a", 1, "1")
	mustSeal(t, v, b.pool, b.ns, "b", 1, "2")
	mustShred(t, v, b.pool, b.ns, "a")
	mustShred(t, v, b.pool, b.ns, "b")
	for _, table := range []string{"secret_keys", "secret_values"} {
		if n := count(t, b.pool, `SELECT count(*) FROM `+table+` WHERE namespace = $1`, b.ns); n != 0 {
			t.Fatalf("%d rows left in %s", n, table)
		}
	}
	mustShred(t, v, b.pool, b.ns, "b") // nothing to shred: no error, no key made
	if n := count(t, b.pool, `SELECT count(*) FROM secret_keys WHERE namespace = $1`, b.ns); n != 0 {
		t.Fatalf("shredding nothing made a key row")
	}
	mustSeal(t, v, b.pool, b.ns, "b", 2, "again")
	requireOpen(t, secrets.NewVault(b.pool, b.keys), b.ns, "b", 2, "again")
}

// TestShredUnknownSecretKeepsTheKey: shredding a name with no values in a
// namespace that has others changes nothing.
func TestShredUnknownSecretKeepsTheKey(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	mustSeal(t, v, b.pool, b.ns, "a", 1, "1")
	key := func() (k struct {
		id      uuid.UUID
		wrapped []byte
	}) {
		t.Helper()
		if err := b.pool.QueryRow(context.Background(), `SELECT key_id, wrapped FROM secret_keys WHERE namespace = $1`, b.ns).Scan(&k.id, &k.wrapped); err != nil {
			t.Fatal(err)
		}
		return k
	}
	before := key()
	mustShred(t, v, b.pool, b.ns, "never")
	if after := key(); after.id != before.id || !bytes.Equal(after.wrapped, before.wrapped) {
		t.Fatalf("shredding an unknown secret re-keyed the namespace (%s → %s)", before.id, after.id)
	}
	requireOpen(t, v, b.ns, "a", 1, "1")
}

// TestConcurrentSealAndShred: first seals racing for a namespace's key make
// one; seals and shreds racing in it leave every kept value open under the
// one current key, and every shredded one gone.
func TestConcurrentSealAndShred(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	const writers = 12
	var wg sync.WaitGroup
	errs := make(chan error, writers*4)
	for i := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("s%d", i)
			for version := 1; version <= 2; version++ {
				if err := seal(v, b.pool, b.ns, name, version, []byte(name+"/"+fmt.Sprint(version))); err != nil {
					errs <- err
				}
			}
			if i%3 == 0 {
				if err := shred(v, b.pool, b.ns, name); err != nil {
					errs <- err
				}
			}
			if _, err := v.Open(context.Background(), b.ns, name, 1); err != nil && domain.ErrorCode(err) != domain.ENOTFOUND {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	fresh := secrets.NewVault(b.pool, b.keys)
	for i := range writers {
		name := fmt.Sprintf("s%d", i)
		for version := 1; version <= 2; version++ {
			if i%3 == 0 {
				_, err := fresh.Open(context.Background(), b.ns, name, version)
				testutil.RequireCode(t, err, domain.ENOTFOUND)
				continue
			}
			requireOpen(t, fresh, b.ns, name, version, name+"/"+fmt.Sprint(version))
		}
	}
	if n := count(t, b.pool, `SELECT count(DISTINCT v.key_id) FROM secret_values v JOIN secret_keys k USING (namespace, key_id) WHERE namespace = $1`, b.ns); n != 1 {
		t.Fatalf("kept values under %d current keys, want 1", n)
	}
	if n := count(t, b.pool, `SELECT count(*) FROM secret_values v WHERE namespace = $1 AND key_id <> (SELECT key_id FROM secret_keys WHERE namespace = $1)`, b.ns); n != 0 {
		t.Fatalf("%d values not under the namespace's key", n)
	}
}

// TestSealRollsBackWithItsTransaction: a value sealed in a transaction that
// rolls back is not stored, nor is the key it made.
func TestSealRollsBackWithItsTransaction(t *testing.T) {
	t.Parallel()
	v, b := setup(t, pgtest.Pool(t))
	ctx := context.Background()
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Seal(ctx, tx, b.ns, "s", 1, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil && err != pgx.ErrTxClosed {
		t.Fatal(err)
	}
	_, err = v.Open(ctx, b.ns, "s", 1)
	testutil.RequireCode(t, err, domain.ENOTFOUND)
	if n := count(t, b.pool, `SELECT count(*) FROM secret_keys WHERE namespace = $1`, b.ns); n != 0 {
		t.Fatalf("a rolled back seal left a key row")
	}
}
