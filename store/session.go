package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
)

// Session is a signed-in user of the web console. It is kept in the database
// rather than only in a signed cookie so that signing out (DeleteSession)
// refuses the cookie from then on, on every replica.
type Session struct {
	Subject   string
	Namespace string
	Admin     bool
	CSRF      string // a random token the console's forms must send back
	CreatedAt time.Time
	ExpiresAt time.Time

	// Name is how the user is called on the console's pages ("" when the
	// token said nothing but its subject); it authorises nothing.
	Name string
}

// sessionBytes is the size of a session id and of a CSRF token before
// encoding; sessionIDLen is the length of the encoded id (base64url, no padding).
const (
	sessionBytes = 32
	sessionIDLen = 43
)

// sessionNotFound is the one answer for a missing, expired or malformed id,
// so a caller learns nothing about which.
func sessionNotFound() error {
	return domain.Errorf(domain.ENOTFOUND, "session not found or expired")
}

// randomToken returns sessionBytes random bytes and their base64url text.
func randomToken() ([]byte, string) {
	b := make([]byte, sessionBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it crashes the program instead)
	return b, base64.RawURLEncoding.EncodeToString(b)
}

// sessionKey is the primary key of a session: the SHA-256 of the id's bytes,
// so that the table holds nothing a reader could present as a cookie. ok is
// false for an id CreateSession cannot have made.
func sessionKey(id string) (key []byte, ok bool) {
	if len(id) != sessionIDLen {
		return nil, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(id)
	if err != nil || len(raw) != sessionBytes {
		return nil, false
	}
	sum := sha256.Sum256(raw)
	return sum[:], true
}

// CreateSession starts a console session for subject (called name, which
// may be "") in namespace, valid until expiresAt, and returns its id (the
// cookie's value: 32 random bytes, base64url without padding) with the
// session and its CSRF token. Only the
// id's SHA-256 is stored. It also deletes the sessions that expired more
// than an hour ago, so the table does not grow without a cleanup job.
//
// Errors: EINVALID (expiresAt not in the future, by the database's clock),
// EUNAVAILABLE, EINTERNAL.
func (s *Store) CreateSession(ctx context.Context, subject, name, namespace string, admin bool, expiresAt time.Time) (string, Session, error) {
	raw, id := randomToken()
	key := sha256.Sum256(raw)
	_, csrf := randomToken()
	sess := Session{Subject: subject, Name: name, Namespace: namespace, Admin: admin, CSRF: csrf}
	// The database's clock decides expiry everywhere (GetSession too), so
	// replicas with skewed clocks agree on it.
	err := s.pool.QueryRow(ctx, `WITH cleanup AS (
			DELETE FROM console_sessions WHERE expires_at < now() - interval '1 hour'
		)
		INSERT INTO console_sessions (id_hash, subject, name, namespace, admin, csrf, created_at, expires_at)
		SELECT $1::bytea, $2::text, $3::text, $4::text, $5::bool, $6::text, now(), $7::timestamptz WHERE $7 > now()
		RETURNING created_at, expires_at`,
		key[:], subject, name, namespace, admin, csrf, expiresAt).Scan(&sess.CreatedAt, &sess.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", Session{}, domain.Errorf(domain.EINVALID, "session expiry %s is not in the future", expiresAt.UTC().Format(time.RFC3339))
	}
	if err != nil {
		return "", Session{}, dbError("create session", err)
	}
	sess.CreatedAt, sess.ExpiresAt = sess.CreatedAt.UTC(), sess.ExpiresAt.UTC()
	return id, sess, nil
}

// GetSession returns the session with id if it exists and has not expired.
// An id that CreateSession cannot have made is refused without a query.
//
// Errors: ENOTFOUND (missing, expired or malformed: one message for all),
// EUNAVAILABLE, EINTERNAL.
func (s *Store) GetSession(ctx context.Context, id string) (Session, error) {
	key, ok := sessionKey(id)
	if !ok {
		return Session{}, sessionNotFound()
	}
	var sess Session
	err := s.pool.QueryRow(ctx, `SELECT subject, name, namespace, admin, csrf, created_at, expires_at FROM console_sessions
		WHERE id_hash = $1 AND expires_at > now()`, key).
		Scan(&sess.Subject, &sess.Name, &sess.Namespace, &sess.Admin, &sess.CSRF, &sess.CreatedAt, &sess.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, sessionNotFound()
	}
	if err != nil {
		return Session{}, dbError("get session", err)
	}
	sess.CreatedAt, sess.ExpiresAt = sess.CreatedAt.UTC(), sess.ExpiresAt.UTC()
	return sess, nil
}

// DeleteSession ends the session with id (signing out). Ending one that does
// not exist, has expired or is malformed does nothing and is no error.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	key, ok := sessionKey(id)
	if !ok {
		return nil
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash = $1`, key)
	return dbError("delete session", err)
}
