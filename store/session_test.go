package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

var sessionToken = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)

// sessionKey is the stored key of a session id: the SHA-256 of its 32 bytes.
func sessionKey(t *testing.T, id string) []byte {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw)
	return sum[:]
}

func mustCreateSession(t *testing.T, s *store.Store, subject, ns string, admin bool, expires time.Time) (string, store.Session) {
	t.Helper()
	id, sess, err := s.CreateSession(context.Background(), subject, "Name of "+subject, ns, admin, expires)
	if err != nil {
		t.Fatal(err)
	}
	return id, sess
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	ns := testutil.UniqueNS(t)
	expires := time.Now().Add(time.Hour)

	id, created := mustCreateSession(t, s, "alice", ns, true, expires)
	if !sessionToken.MatchString(id) || !sessionToken.MatchString(created.CSRF) || id == created.CSRF {
		t.Fatalf("id %q and CSRF %q: want two different 43-character base64url tokens", id, created.CSRF)
	}
	if created.Subject != "alice" || created.Name != "Name of alice" || created.Namespace != ns || !created.Admin ||
		!created.ExpiresAt.Equal(expires.Truncate(time.Microsecond)) || time.Since(created.CreatedAt).Abs() > time.Minute {
		t.Fatalf("created %+v", created)
	}
	got, err := s.GetSession(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if got != created {
		t.Fatalf("got %+v, want %+v", got, created)
	}

	other, otherSess := mustCreateSession(t, s, "bob", ns, false, expires)
	if other == id || otherSess.CSRF == created.CSRF || otherSess.Admin {
		t.Fatalf("second session %q %+v repeats the first or is admin", other, otherSess)
	}

	// Only the hash of the id is stored.
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions WHERE id_hash = $1`, sessionKey(t, id)).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows keyed by the id's SHA-256: %d, %v", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions s WHERE strpos(s::text, $1) > 0
		OR strpos(s::text, encode(decode(translate($1, '-_', '+/') || '=', 'base64'), 'hex')) > 0`, id).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows hold the raw id (%v)", n, err)
	}

	if err := s.DeleteSession(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetSession(ctx, id)
	testutil.RequireCode(t, err, domain.ENOTFOUND, "session not found or expired")
	if err := s.DeleteSession(ctx, id); err != nil {
		t.Fatalf("deleting a deleted session: %v", err)
	}
	if _, err := s.GetSession(ctx, other); err != nil {
		t.Fatalf("the other session went with the first: %v", err)
	}
}

// TestSessionExpiry: an expired session is refused at once; sessions expired
// more than an hour ago are deleted by the next CreateSession, newer ones kept.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	ns := testutil.UniqueNS(t)
	expire := func(id string, ago time.Duration) {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE console_sessions SET expires_at = now() - $2::bigint * interval '1 microsecond'
			WHERE id_hash = $1`, sessionKey(t, id), ago.Microseconds()); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := mustCreateSession(t, s, "alice", ns, false, time.Now().Add(time.Hour))
	recent, _ := mustCreateSession(t, s, "alice", ns, false, time.Now().Add(time.Hour))
	live, _ := mustCreateSession(t, s, "alice", ns, false, time.Now().Add(time.Hour))
	expire(old, 61*time.Minute)
	expire(recent, time.Second)
	for _, id := range []string{old, recent} {
		_, err := s.GetSession(ctx, id)
		testutil.RequireCode(t, err, domain.ENOTFOUND, "session not found or expired")
	}

	mustCreateSession(t, s, "carol", ns, false, time.Now().Add(time.Minute))
	left := map[string]bool{}
	rows, err := pool.Query(ctx, `SELECT id_hash FROM console_sessions`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var key []byte
		if err := rows.Scan(&key); err != nil {
			t.Fatal(err)
		}
		left[string(key)] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(left) != 3 || left[string(sessionKey(t, old))] || !left[string(sessionKey(t, recent))] || !left[string(sessionKey(t, live))] {
		t.Fatalf("after cleanup %d sessions; old kept %v, recent kept %v, live kept %v, want 3, false, true, true",
			len(left), left[string(sessionKey(t, old))], left[string(sessionKey(t, recent))], left[string(sessionKey(t, live))])
	}
	if _, err := s.GetSession(ctx, live); err != nil {
		t.Fatal(err)
	}
}

func TestCreateSessionRefusesPastExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewDB(t)
	s := setupOn(t, pool)
	for _, at := range []time.Time{{}, time.Now().Add(-time.Second), time.Now()} {
		_, _, err := s.CreateSession(ctx, "alice", "", testutil.UniqueNS(t), false, at)
		testutil.RequireCode(t, err, domain.EINVALID)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM console_sessions`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d sessions stored (%v), want none", n, err)
	}
}

// TestSessionIDIsCheckedBeforeTheDatabase: on a store whose database cannot
// be reached, a malformed id is plainly not found (no query was sent) while a
// well-formed one reports the outage.
func TestSessionIDIsCheckedBeforeTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig("postgres://nobody@127.0.0.1:1/none?connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := store.New(pool, nil)

	wellFormed := strings.Repeat("A", 42) + "Q"
	_, err = s.GetSession(ctx, wellFormed)
	testutil.RequireCode(t, err, domain.EUNAVAILABLE)

	for _, id := range []string{"", "abc", strings.Repeat("A", 44), strings.Repeat("A", 42), strings.Repeat("A", 42) + "+",
		strings.Repeat("A", 42) + "/", strings.Repeat("A", 42) + "=", strings.Repeat("A", 41) + "==", strings.Repeat("A", 42) + "\n",
		strings.Repeat("é", 21) + "A", strings.Repeat("A", 42) + "B"} { // B: trailing bits not zero, not an id we make
		_, err := s.GetSession(ctx, id)
		testutil.RequireCode(t, err, domain.ENOTFOUND, "session not found or expired")
		if err := s.DeleteSession(ctx, id); err != nil {
			t.Errorf("delete %q: %v", id, err)
		}
	}
}
