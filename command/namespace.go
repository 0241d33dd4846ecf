package command

import (
	"context"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// EnsureNamespace records namespace ns unless it exists (idempotent, as the
// Terraform provider calls it on every run); created says whether it did.
//
// Errors: EINVALID (not a namespace name).
func (c *Commands) EnsureNamespace(ctx context.Context, meta store.Metadata, ns string) (created bool, err error) {
	now := c.now()
	evs, err := c.cfg.Store.Execute(ctx, meta, func(tx *store.Tx) error {
		return ensureNamespace(ctx, tx, ns, now)
	})
	return len(evs) > 0, err
}

// ensureNamespace records namespace ns in tx unless it exists.
func ensureNamespace(ctx context.Context, tx *store.Tx, ns string, now time.Time) error {
	n := &domain.Namespace{Name: ns}
	_, err := change(ctx, tx, domain.NamespaceStream(ns), n, func() ([]domain.Event, error) { return n.Ensure(now) }, nil)
	return err
}
