package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
)

// SecretInfo is a secret's read model: its name and newest version, never
// its value, and the functions whose configuration uses it.
type SecretInfo struct {
	domain.Secret
	UsedBy []string
}

// secretSelect selects SecretInfo columns, with the users of each secret.
const secretSelect = `SELECT s.namespace, s.name, s.version, s.created_at, s.updated_at,
	coalesce(array(SELECT f.name FROM functions f WHERE f.namespace = s.namespace AND s.name = ANY (f.secret_names) ORDER BY f.name), '{}')
	FROM secrets s`

func scanSecret(row pgx.CollectableRow) (SecretInfo, error) {
	var s SecretInfo
	err := row.Scan(&s.Namespace, &s.Name, &s.Version, &s.CreatedAt, &s.UpdatedAt, &s.UsedBy)
	s.Exists = true
	s.CreatedAt, s.UpdatedAt = s.CreatedAt.UTC(), s.UpdatedAt.UTC()
	return s, err
}

// GetSecret returns the read model of one secret.
//
// Errors: ENOTFOUND, EUNAVAILABLE, EINTERNAL.
func (s *Store) GetSecret(ctx context.Context, ns, name string) (SecretInfo, error) {
	rows, _ := s.pool.Query(ctx, secretSelect+` WHERE s.namespace = $1 AND s.name = $2`, ns, name)
	sec, err := pgx.CollectExactlyOneRow(rows, scanSecret)
	return sec, notFound(err, "secret", name)
}

// ListSecrets returns the secrets of a namespace ordered by name.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (s *Store) ListSecrets(ctx context.Context, ns string) ([]SecretInfo, error) {
	rows, _ := s.pool.Query(ctx, secretSelect+` WHERE s.namespace = $1 ORDER BY s.name`, ns)
	ss, err := pgx.CollectRows(rows, scanSecret)
	return ss, dbError("list secrets", err)
}

// SecretVersions returns the newest version of each named secret of the
// namespace that exists, inside the command's transaction. The caller
// locks the secrets' streams first (Tx.Lock), as a set or a delete does,
// so a function made with these versions never names a deleted one.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (t *Tx) SecretVersions(ctx context.Context, ns string, names []string) (map[string]int, error) {
	if len(names) == 0 {
		return nil, nil
	}
	rows, _ := t.Query(ctx, `SELECT name, version FROM secrets WHERE namespace = $1 AND name = ANY ($2) ORDER BY name`, ns, names)
	out := map[string]int{}
	var name string
	var version int
	_, err := pgx.ForEachRow(rows, []any{&name, &version}, func() error {
		out[name] = version
		return nil
	})
	return out, dbError("read secret versions", err)
}

// FunctionsUsingSecret names the functions of the namespace whose
// configuration uses the secret, inside the command's transaction.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (t *Tx) FunctionsUsingSecret(ctx context.Context, ns, name string) ([]string, error) {
	rows, _ := t.Query(ctx, `SELECT name FROM functions WHERE namespace = $1 AND $2 = ANY (secret_names) ORDER BY name`, ns, name)
	fns, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return fns, dbError("list functions using a secret", err)
}
