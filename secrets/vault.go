package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
)

// MaxValueBytes is the largest secret value Seal takes.
const MaxValueBytes = 64 << 10

// wrapLock is the PostgreSQL advisory lock (pg_advisory_xact_lock) every
// transaction that wraps a new data key takes shared, and RotateKEK's last
// sweep takes exclusively: the sweep waits for every key wrapped by a
// keyring that did not know the rotation yet, and catches it. ("slesssec")
const wrapLock int64 = 0x736c657373736563

// Vault seals and opens the values of namespace secrets (see the package
// doc). It is safe for concurrent use.
type Vault struct {
	pool *pgxpool.Pool
	keys atomic.Pointer[Keyring]
	deks dekCache
}

// NewVault returns a vault over the database of pool, with the KEKs of keys.
func NewVault(pool *pgxpool.Pool, keys *Keyring) *Vault {
	v := &Vault{pool: pool}
	v.keys.Store(keys)
	return v
}

// keyRow is a row of secret_keys.
type keyRow struct {
	keyID   uuid.UUID
	kekID   string
	wrapped []byte
}

// Seal stores value as version of the secret name in namespace, encrypted
// under the namespace's data key (created on the namespace's first secret),
// in tx: the caller appends the secret's event in the same transaction,
// which must be READ COMMITTED (pgx's default). value may be empty, not nil.
//
// Errors: EINVALID (an empty namespace or name, a version below 1, a nil
// value), ETOOLARGE (over MaxValueBytes), ECONFLICT (that version is sealed
// already; tx is then aborted), EINTERNAL (the namespace's data key does not
// unwrap, or the database failed).
func (v *Vault) Seal(ctx context.Context, tx pgx.Tx, namespace, name string, version int, value []byte) error {
	switch {
	case namespace == "":
		return domain.FieldErrorf("namespace", "is required")
	case name == "":
		return domain.FieldErrorf("name", "is required")
	case version < 1:
		return domain.FieldErrorf("version", "must be 1 or more, not %d", version)
	case value == nil:
		return domain.FieldErrorf("value", "is required (it may be empty)")
	case len(value) > MaxValueBytes:
		return domain.Errorf(domain.ETOOLARGE, "secret value is %d bytes, over the limit of %d (64 KiB)", len(value), MaxValueBytes)
	}
	key, err := v.sharedKey(ctx, tx, namespace)
	if err != nil {
		return err
	}
	sealed := seal(key.aead, value, valueAAD(namespace, name, version, key.id))
	_, err = tx.Exec(ctx, `INSERT INTO secret_values (namespace, name, version, key_id, sealed) VALUES ($1, $2, $3, $4, $5)`,
		namespace, name, version, key.id, sealed)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return domain.Errorf(domain.ECONFLICT, "secret %q version %d is sealed already", name, version)
	}
	if err != nil {
		return fmt.Errorf("seal secret: %w", err)
	}
	return nil
}

// sharedKey returns the namespace's data key, creating it if it has none,
// with its row locked FOR SHARE until tx ends: a Shred (FOR UPDATE) cannot
// re-key the namespace under the value being sealed.
func (v *Vault) sharedKey(ctx context.Context, tx pgx.Tx, namespace string) (dataKey, error) {
	for range 3 {
		row, ok, err := lockKeyRow(ctx, tx, namespace, "FOR SHARE")
		if err != nil {
			return dataKey{}, err
		}
		if ok {
			return v.unwrap(namespace, row)
		}
		key, row, err := v.newDataKey(ctx, tx, namespace)
		if err != nil {
			return dataKey{}, err
		}
		// A concurrent first Seal may win the insert: then use its key, on the next turn.
		tag, err := tx.Exec(ctx, `INSERT INTO secret_keys (namespace, key_id, kek_id, wrapped) VALUES ($1, $2, $3, $4)
			ON CONFLICT (namespace) DO NOTHING`, namespace, row.keyID, row.kekID, row.wrapped)
		if err != nil {
			return dataKey{}, fmt.Errorf("create data key: %w", err)
		}
		if tag.RowsAffected() == 1 {
			v.deks.put(key)
			return key, nil
		}
	}
	return dataKey{}, domain.Errorf(domain.ECONFLICT, "the data key of namespace %q keeps changing; try again", namespace)
}

// lockKeyRow reads the namespace's key row with lock ("FOR SHARE" or "FOR
// UPDATE"); ok is false when it has none.
func lockKeyRow(ctx context.Context, tx pgx.Tx, namespace, lock string) (row keyRow, ok bool, err error) {
	err = tx.QueryRow(ctx, `SELECT key_id, kek_id, wrapped FROM secret_keys WHERE namespace = $1 `+lock, namespace).
		Scan(&row.keyID, &row.kekID, &row.wrapped)
	if errors.Is(err, pgx.ErrNoRows) {
		return keyRow{}, false, nil
	}
	if err != nil {
		return keyRow{}, false, fmt.Errorf("read data key: %w", err)
	}
	return row, true, nil
}

// newDataKey makes a data key for namespace and wraps it with the current
// KEK, holding wrapLock shared until tx ends (see wrapLock).
func (v *Vault) newDataKey(ctx context.Context, tx pgx.Tx, namespace string) (dataKey, keyRow, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, wrapLock); err != nil {
		return dataKey{}, keyRow{}, fmt.Errorf("create data key: %w", err)
	}
	kek, err := v.keys.Load().current()
	if err != nil {
		return dataKey{}, keyRow{}, domain.Errorf(domain.EINTERNAL, "secrets keyring: %v", err)
	}
	dek := newKey()
	defer clear(dek)
	key := dataKey{id: uuid.New()}
	if key.aead, err = gcm(dek); err != nil {
		return dataKey{}, keyRow{}, err
	}
	row := keyRow{keyID: key.id, kekID: kek.id, wrapped: seal(kek.aead, dek, dekAAD(namespace, key.id))}
	return key, row, nil
}

// unwrap returns the data key of row, from the cache when it is there.
func (v *Vault) unwrap(namespace string, row keyRow) (dataKey, error) {
	if key, ok := v.deks.get(row.keyID); ok {
		return key, nil
	}
	key, err := unwrapWith(v.keys.Load(), namespace, row)
	if err != nil {
		return dataKey{}, err
	}
	v.deks.put(key)
	return key, nil
}

// unwrapWith unwraps row's data key with the KEK of keys it names.
func unwrapWith(keys *Keyring, namespace string, row keyRow) (dataKey, error) {
	dek, err := unwrapDEK(keys, namespace, row)
	if err != nil {
		return dataKey{}, err
	}
	defer clear(dek)
	aead, err := gcm(dek)
	if err != nil {
		return dataKey{}, domain.Errorf(domain.EINTERNAL, "the data key %s of namespace %q is not an AES-256 key", row.keyID, namespace)
	}
	return dataKey{id: row.keyID, aead: aead}, nil
}

// unwrapDEK returns the bytes of row's data key; the caller clears them. An
// unknown KEK and a row that does not unwrap are EINTERNAL, naming the
// kek_id.
func unwrapDEK(keys *Keyring, namespace string, row keyRow) ([]byte, error) {
	kek, ok, err := keys.lookup(row.kekID)
	if err != nil {
		return nil, domain.Errorf(domain.EINTERNAL, "secrets keyring: %v", err)
	}
	if !ok {
		return nil, domain.Errorf(domain.EINTERNAL,
			"the data key of namespace %q is wrapped by key-encryption key %s, which the keyring (%s) does not hold",
			namespace, row.kekID, strings.Join(keys.IDs(), ", "))
	}
	dek, err := open(kek.aead, row.wrapped, dekAAD(namespace, row.keyID))
	if err != nil || len(dek) != KeyBytes {
		return nil, domain.Errorf(domain.EINTERNAL,
			"the data key %s of namespace %q does not unwrap with key-encryption key %s: its row was altered", row.keyID, namespace, row.kekID)
	}
	return dek, nil
}

// Open returns the value of version of the secret name in namespace.
//
// Errors: ENOTFOUND (no such version: deleted, or never sealed), EINTERNAL
// (the namespace's data key is wrapped by a KEK the keyring does not hold,
// naming its kek_id; a row altered or moved; the database failed).
func (v *Vault) Open(ctx context.Context, namespace, name string, version int) ([]byte, error) {
	var keyID uuid.UUID
	var sealed []byte
	var kekID *string
	var wrapped []byte
	// One statement, one snapshot: the value and the key it was sealed under, even during a Shred.
	err := v.pool.QueryRow(ctx, `SELECT v.key_id, v.sealed, k.kek_id, k.wrapped
		FROM secret_values v LEFT JOIN secret_keys k ON k.namespace = v.namespace AND k.key_id = v.key_id
		WHERE v.namespace = $1 AND v.name = $2 AND v.version = $3`, namespace, name, version).
		Scan(&keyID, &sealed, &kekID, &wrapped)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, domain.Errorf(domain.ENOTFOUND, "secret %q version %d no longer exists", name, version)
	}
	if err != nil {
		return nil, fmt.Errorf("open secret: %w", err)
	}
	key, ok := v.deks.get(keyID)
	if !ok {
		if kekID == nil {
			return nil, domain.Errorf(domain.EINTERNAL, "secret %q version %d: its data key %s is missing", name, version, keyID)
		}
		if key, err = v.unwrap(namespace, keyRow{keyID: keyID, kekID: *kekID, wrapped: wrapped}); err != nil {
			return nil, err
		}
	}
	plain, err := open(key.aead, sealed, valueAAD(namespace, name, version, keyID))
	if err != nil {
		return nil, domain.Errorf(domain.EINTERNAL, "secret %q version %d does not decrypt: its row was altered or moved", name, version)
	}
	return plain, nil
}

// Shred deletes every version of the secret name in namespace, in tx (the
// caller appends the deletion's event in it), and crypto-shreds them: the
// namespace gets a new data key, its other values are sealed again under it
// and the old key's row is replaced (updated in place: the old row version
// is dead), so the deleted ciphertext, wherever a copy of it survives, opens
// with no key a live row holds. The last
// secret of a namespace gone, the namespace has no key row at all. The key
// row is locked FOR UPDATE, so Seal and Shred in a namespace take turns. A
// secret with no stored version is not an error: nothing changes.
//
// Errors: EINTERNAL (the namespace's data key does not unwrap, a value does
// not open, or the database failed).
func (v *Vault) Shred(ctx context.Context, tx pgx.Tx, namespace, name string) error {
	old, ok, err := lockKeyRow(ctx, tx, namespace, "FOR UPDATE")
	if err != nil {
		return err
	}
	tag, err := tx.Exec(ctx, `DELETE FROM secret_values WHERE namespace = $1 AND name = $2`, namespace, name)
	if err != nil {
		return fmt.Errorf("shred secret: %w", err)
	}
	if !ok || tag.RowsAffected() == 0 {
		return nil
	}
	defer v.deks.drop(old.keyID)
	rows, err := tx.Query(ctx, `SELECT name, version, key_id, sealed FROM secret_values WHERE namespace = $1`, namespace)
	if err != nil {
		return fmt.Errorf("shred secret: %w", err)
	}
	type value struct {
		name    string
		version int
		keyID   uuid.UUID
		sealed  []byte
	}
	rest, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (value, error) {
		var x value
		return x, r.Scan(&x.name, &x.version, &x.keyID, &x.sealed)
	})
	if err != nil {
		return fmt.Errorf("shred secret: %w", err)
	}
	if len(rest) == 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM secret_keys WHERE namespace = $1`, namespace); err != nil {
			return fmt.Errorf("shred secret: %w", err)
		}
		return nil
	}

	oldKey, err := v.unwrap(namespace, old)
	if err != nil {
		return err
	}
	key, row, err := v.newDataKey(ctx, tx, namespace)
	if err != nil {
		return err
	}
	var b pgx.Batch
	b.Queue(`UPDATE secret_keys SET key_id = $2, kek_id = $3, wrapped = $4, created_at = now() WHERE namespace = $1`,
		namespace, row.keyID, row.kekID, row.wrapped)
	for _, x := range rest {
		plain, err := open(oldKey.aead, x.sealed, valueAAD(namespace, x.name, x.version, x.keyID))
		if err != nil || x.keyID != old.keyID {
			return domain.Errorf(domain.EINTERNAL, "secret %q version %d does not decrypt under its namespace's data key %s: its row was altered",
				x.name, x.version, old.keyID)
		}
		b.Queue(`UPDATE secret_values SET key_id = $4, sealed = $5 WHERE namespace = $1 AND name = $2 AND version = $3`,
			namespace, x.name, x.version, key.id, seal(key.aead, plain, valueAAD(namespace, x.name, x.version, key.id)))
		clear(plain)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("re-key namespace: %w", err)
	}
	v.deks.put(key)
	return nil
}
