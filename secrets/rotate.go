package secrets

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/domain"
)

// maxRotateRounds bounds RotateKEK's sweeps: each round after the first only
// meets the keys other servers wrapped, with a keyring that had not seen the
// new KEK yet, during the round before.
const maxRotateRounds = 10

// RotateKEK re-wraps every namespace's data key under next's current key,
// namespace by namespace in short transactions, so that readers and writers
// keep working; the data keys, and so the sealed values, do not change. From
// its start the vault wraps new data keys under next and unwraps with both
// keyrings; once it succeeds, with next only. It ends after a check, with
// wrapLock held exclusively, that no key row names another KEK: no
// transaction is then wrapping a key with a keyring that did not know next.
// It returns how many data keys it re-wrapped; run again, it re-wraps none.
//
// Errors: EINTERNAL (a data key wrapped by a KEK neither keyring holds,
// naming its kek_id; a row that does not unwrap; the database failed).
// After an error, what was re-wrapped stays so: run it again.
func (v *Vault) RotateKEK(ctx context.Context, next *Keyring) (rewrapped int, err error) {
	target := next.ID()
	both := next.with(v.keys.Load())
	v.keys.Store(both)
	for range maxRotateRounds {
		stale, err := staleNamespaces(ctx, v.pool, target)
		if err != nil {
			return rewrapped, err
		}
		for _, ns := range stale {
			ok, err := v.rewrap(ctx, both, ns)
			if err != nil {
				return rewrapped, err
			}
			if ok {
				rewrapped++
			}
		}
		done, err := noneStale(ctx, v.pool, target)
		if err != nil {
			return rewrapped, err
		}
		if done {
			v.keys.Store(next)
			return rewrapped, nil
		}
	}
	return rewrapped, domain.Errorf(domain.EINTERNAL,
		"data keys wrapped by another KEK keep appearing after %d rounds: is a server running with an inline %s instead of the key file?", maxRotateRounds, EnvKey)
}

func staleNamespaces(ctx context.Context, pool *pgxpool.Pool, target string) ([]string, error) {
	rows, err := pool.Query(ctx, `SELECT namespace FROM secret_keys WHERE kek_id <> $1 ORDER BY namespace`, target)
	if err != nil {
		return nil, fmt.Errorf("list data keys: %w", err)
	}
	nss, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("list data keys: %w", err)
	}
	return nss, nil
}

// noneStale reports whether no key row names a KEK other than target, asked
// with wrapLock held exclusively: every transaction that wrapped a key
// before has ended, and none wraps one meanwhile. It holds no row lock, so
// a Shred holding its key row while it waits for wrapLock cannot deadlock
// with it.
func noneStale(ctx context.Context, pool *pgxpool.Pool, target string) (bool, error) {
	var none bool
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, wrapLock); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM secret_keys WHERE kek_id <> $1)`, target).Scan(&none)
	})
	if err != nil {
		return false, fmt.Errorf("check data keys: %w", err)
	}
	return none, nil
}

// rewrap re-wraps the data key of namespace under keys' current KEK in a
// transaction of its own; ok is false when there was nothing to do (the
// namespace has no key any more, or it is wrapped so already).
func (v *Vault) rewrap(ctx context.Context, keys *Keyring, namespace string) (ok bool, err error) {
	kek, err := keys.current()
	if err != nil {
		return false, domain.Errorf(domain.EINTERNAL, "secrets keyring: %v", err)
	}
	err = pgx.BeginFunc(ctx, v.pool, func(tx pgx.Tx) error {
		row, found, err := lockKeyRow(ctx, tx, namespace, "FOR UPDATE")
		if err != nil || !found || row.kekID == kek.id {
			return err
		}
		dek, err := unwrapDEK(keys, namespace, row)
		if err != nil {
			return err
		}
		defer clear(dek)
		wrapped := seal(kek.aead, dek, dekAAD(namespace, row.keyID))
		if _, err := tx.Exec(ctx, `UPDATE secret_keys SET kek_id = $2, wrapped = $3 WHERE namespace = $1`, namespace, kek.id, wrapped); err != nil {
			return fmt.Errorf("re-wrap data key of %s: %w", namespace, err)
		}
		ok = true
		return nil
	})
	return ok, err
}

// Rotation is what RotateKeyFile did.
type Rotation struct {
	Rewrapped int      // namespaces whose data key was re-wrapped
	Old       []string // fingerprints of the keys the file held before, current first
	New       string   // fingerprint of the new key, the file's only key now
}

// RotateKeyFile rotates the KEK of the key file at path online, against the
// database of pool, while servers that follow the file keep serving:
//
//  1. It writes the file (a temporary file renamed over it, mode 0600) with
//     a new key first and the old ones after. A server reads the file again
//     before it next wraps a data key, and when it meets the new kek_id, so
//     from here every server opens keys wrapped by either and wraps under
//     the new one.
//  2. It re-wraps every namespace's data key under the new key (RotateKEK):
//     a short transaction per namespace; the data keys do not change, so
//     nothing is re-encrypted and cached data keys stay good.
//  3. It checks, with wrapLock held exclusively, that no data key is wrapped
//     by an old key any more (one a server wrapped before it saw step 1),
//     and goes back to 2 if one is.
//  4. It writes the file with the new key only. Destroy any other copy of
//     the old keys (backups of the file included): see the package doc.
//
// After an error the file keeps the new key and the old ones, so every
// server still works; running RotateKeyFile again finishes the job (under a
// newer key). A server given its key inline in SLESS_SECRETS_KEY does not
// follow the file: restart it with the file instead.
//
// Errors: those of RotateKEK, and the key file's (unreadable, mode open to
// group or others, not a key file).
func RotateKeyFile(ctx context.Context, pool *pgxpool.Pool, path string) (Rotation, error) {
	old, _, err := readKeyFile(path)
	if err != nil {
		return Rotation{}, err
	}
	if len(old) == 0 {
		return Rotation{}, fmt.Errorf("key file %s holds no key", path)
	}
	key := newKey()
	r := Rotation{New: Fingerprint(key)}
	for _, k := range old {
		r.Old = append(r.Old, Fingerprint(k))
	}
	if err := writeKeyFile(path, append([][]byte{key}, old...)); err != nil {
		return r, err
	}
	current, err := LoadKeyringFile(path)
	if err != nil {
		return r, err
	}
	next, err := newKeyring("", [][]byte{key})
	if err != nil {
		return r, err
	}
	if r.Rewrapped, err = NewVault(pool, current).RotateKEK(ctx, next); err != nil {
		return r, fmt.Errorf("re-wrap data keys (the key file keeps the new key and the old ones; run the rotation again): %w", err)
	}
	if err := writeKeyFile(path, [][]byte{key}); err != nil {
		return r, err
	}
	return r, nil
}
