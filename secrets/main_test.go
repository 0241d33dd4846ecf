package secrets_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/secrets"
	"github.com/slessio/sless/store/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is what setup gives a test besides the vault.
type bundle struct {
	pool *pgxpool.Pool
	keys *secrets.Keyring
	line string // keys' one key, as a key file's line
	ns   string // a namespace no other test uses
}

// setup returns a vault on pool under a keyring of one new key.
func setup(t *testing.T, pool *pgxpool.Pool) (*secrets.Vault, *bundle) {
	t.Helper()
	keys, line := mustKeyring(t)
	return secrets.NewVault(pool, keys), &bundle{pool: pool, keys: keys, line: line, ns: testutil.UniqueNS(t)}
}

// mustKeyring returns a keyring of one new key and the key's file line.
func mustKeyring(tb testing.TB) (*secrets.Keyring, string) {
	tb.Helper()
	line := newKeyLine()
	keys, err := secrets.ParseKeyring([]byte(line + "\n"))
	if err != nil {
		tb.Fatal(err)
	}
	return keys, line
}

func newKeyLine() string {
	key := make([]byte, secrets.KeyBytes)
	_, _ = rand.Read(key)
	return base64.StdEncoding.EncodeToString(key)
}

// seal seals value in a transaction of its own, as a command does.
func seal(v *secrets.Vault, pool *pgxpool.Pool, ns, name string, version int, value []byte) error {
	ctx := context.Background()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return v.Seal(ctx, tx, ns, name, version, value) })
}

func shred(v *secrets.Vault, pool *pgxpool.Pool, ns, name string) error {
	ctx := context.Background()
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return v.Shred(ctx, tx, ns, name) })
}

func mustSeal(tb testing.TB, v *secrets.Vault, pool *pgxpool.Pool, ns, name string, version int, value string) {
	tb.Helper()
	if err := seal(v, pool, ns, name, version, []byte(value)); err != nil {
		tb.Fatalf("seal %s %s v%d: %v", ns, name, version, err)
	}
}

func mustShred(tb testing.TB, v *secrets.Vault, pool *pgxpool.Pool, ns, name string) {
	tb.Helper()
	if err := shred(v, pool, ns, name); err != nil {
		tb.Fatalf("shred %s %s: %v", ns, name, err)
	}
}

// requireOpen fails tb unless the version opens to want.
func requireOpen(tb testing.TB, v *secrets.Vault, ns, name string, version int, want string) {
	tb.Helper()
	got, err := v.Open(context.Background(), ns, name, version)
	if err != nil {
		tb.Fatalf("open %s %s v%d: %v", ns, name, version, err)
	}
	if string(got) != want {
		tb.Fatalf("open %s %s v%d = %q, want %q", ns, name, version, got, want)
	}
}

// mustExec runs one statement on pool.
func mustExec(tb testing.TB, pool *pgxpool.Pool, sql string, args ...any) {
	tb.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// count returns the single integer sql selects.
func count(tb testing.TB, pool *pgxpool.Pool, sql string, args ...any) int {
	tb.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
	return n
}

// requireInternal fails tb unless err is EINTERNAL and its text contains
// each of parts (testutil.RequireCode checks no message for EINTERNAL).
func requireInternal(tb testing.TB, err error, parts ...string) {
	tb.Helper()
	testutil.RequireCode(tb, err, domain.EINTERNAL)
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			tb.Fatalf("error %v does not mention %q", err, p)
		}
	}
}
