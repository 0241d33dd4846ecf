package command

import (
	"context"
	"maps"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// Sealer keeps the values of secrets apart from the event log (secrets.Vault).
type Sealer interface {
	// Seal stores version of the secret's value, encrypted, in tx.
	Seal(ctx context.Context, tx pgx.Tx, namespace, name string, version int, value []byte) error
	// Shred destroys every version of the secret's value in tx, so that no
	// copy of it (a backup, the WAL) can be decrypted any more.
	Shred(ctx context.Context, tx pgx.Tx, namespace, name string) error
}

// MaxSecretBytes is the largest value of a secret.
const MaxSecretBytes = 64 << 10

// SetSecretInput is a new value of a namespace secret.
type SetSecretInput struct {
	Ref
	Value []byte
}

// RolledFunction is a function version a secret's new value made.
type RolledFunction struct {
	Function string
	Version  int
}

// SetSecret stores a new version of a secret's value, sealed (never in an
// event), and makes a new version of every function whose configuration
// uses the secret, with the new value: each is rolled out as a
// configuration change is (the same code, no rebuild), and a rollback
// brings back the value an older version ran with.
//
// Errors: EINVALID (the name), ETOOLARGE (over MaxSecretBytes),
// EUNAVAILABLE (no secrets key configured).
func (c *Commands) SetSecret(ctx context.Context, meta store.Metadata, in SetSecretInput) (domain.Secret, []RolledFunction, error) {
	if err := domain.ValidateName("name", in.Name); err != nil {
		return domain.Secret{}, nil, err
	}
	if len(in.Value) > MaxSecretBytes {
		return domain.Secret{}, nil, &domain.Error{Code: domain.ETOOLARGE, Field: "value", Message: "value: a secret holds at most 64 KiB"}
	}
	if c.cfg.Secrets == nil {
		return domain.Secret{}, nil, errNoSecrets
	}
	now := c.now()
	var rolled []RolledFunction
	s, _, err := run(ctx, c, meta, newSecret(in.Ref), func(tx *store.Tx, s *domain.Secret) error {
		rolled = nil
		stream := domain.SecretStream(in.Namespace, in.Name)
		if err := tx.Lock(ctx, stream); err != nil {
			return err
		}
		if err := ensureNamespace(ctx, tx, in.Namespace, now); err != nil {
			return err
		}
		if _, err := change(ctx, tx, stream, s, func() ([]domain.Event, error) { return s.Set(now) }, nil); err != nil {
			return err
		}
		if err := c.cfg.Secrets.Seal(ctx, tx.Tx, in.Namespace, in.Name, s.Version, in.Value); err != nil {
			return err
		}
		users, err := tx.FunctionsUsingSecret(ctx, in.Namespace, in.Name)
		if err != nil {
			return err
		}
		for _, name := range users {
			f := domain.NewFunction(in.Namespace, name)
			var made int
			err := changeFunction(ctx, tx, f, func() ([]domain.Event, error) {
				spec := FunctionPatch{}.over(f.Config)
				spec.SecretVersions = maps.Clone(f.Config.SecretVersions)
				if spec.SecretVersions == nil {
					spec.SecretVersions = map[string]int{}
				}
				spec.SecretVersions[in.Name] = s.Version
				evs, err := f.UpdateConfig(spec, now)
				for _, ev := range evs {
					if v, ok := ev.(domain.VersionCreated); ok {
						made = v.Version
					}
				}
				return evs, err
			})
			if err != nil {
				return err
			}
			if made > 0 {
				rolled = append(rolled, RolledFunction{Function: name, Version: made})
			}
		}
		return nil
	})
	return s, rolled, err
}

// DeleteSecret deletes a secret and destroys every version of its value
// (Sealer.Shred). A secret a function's configuration uses is not deleted:
// the function could not start again.
//
// Errors: ENOTFOUND, ECONFLICT (functions use it), EUNAVAILABLE (no
// secrets key configured).
func (c *Commands) DeleteSecret(ctx context.Context, meta store.Metadata, in Ref) error {
	if err := domain.ValidateName("name", in.Name); err != nil {
		return err
	}
	if c.cfg.Secrets == nil {
		return errNoSecrets
	}
	now := c.now()
	_, _, err := run(ctx, c, meta, newSecret(in), func(tx *store.Tx, s *domain.Secret) error {
		stream := domain.SecretStream(in.Namespace, in.Name)
		if err := tx.Lock(ctx, stream); err != nil {
			return err
		}
		users, err := tx.FunctionsUsingSecret(ctx, in.Namespace, in.Name)
		if err != nil {
			return err
		}
		if len(users) > 0 {
			return domain.Errorf(domain.ECONFLICT, "secret %q is in use by %s; remove it from secrets and secret_files first", in.Name, functionList(users))
		}
		if _, err := change(ctx, tx, stream, s, func() ([]domain.Event, error) { return s.Delete(now) }, nil); err != nil {
			return err
		}
		return c.cfg.Secrets.Shred(ctx, tx.Tx, in.Namespace, in.Name)
	})
	return err
}

// errNoSecrets answers secret commands on a platform without a secrets key.
var errNoSecrets = domain.Errorf(domain.EUNAVAILABLE, "secrets are not enabled on this platform: the operator has set no secrets key (SLESS_SECRETS_KEY)")

// functionList names functions for a message: "function a", "functions a, b".
func functionList(names []string) string {
	if len(names) == 1 {
		return "function " + names[0]
	}
	s := "functions "
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}

// newSecret returns a maker of the empty aggregate of secret in.
func newSecret(in Ref) func() *domain.Secret {
	return func() *domain.Secret { return domain.NewSecret(in.Namespace, in.Name) }
}

// resolveSecrets sets spec.SecretVersions to the newest version of each
// secret the spec uses, locking those secrets (in name order, as a set or a
// delete locks one) until tx ends. A secret that does not exist has none,
// which the spec's validation refuses.
func resolveSecrets(ctx context.Context, tx *store.Tx, ns string, spec *domain.FunctionSpec) error {
	names := slices.Collect(maps.Values(spec.Secrets))
	names = append(names, spec.SecretFiles...)
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		if !domain.IsName(name) { // the spec's validation names it
			return nil
		}
		if err := tx.Lock(ctx, domain.SecretStream(ns, name)); err != nil {
			return err
		}
	}
	versions, err := tx.SecretVersions(ctx, ns, names)
	spec.SecretVersions = versions
	return err
}
