package command

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/outbox"
	"github.com/slessio/sless/store"
)

// AsyncEnqueue is an asynchronous invocation to accept.
type AsyncEnqueue struct {
	Namespace, Function string
	Request             store.AsyncRequest
	// IdempotencyKey, when set, dedupes enqueues of the function for
	// domain.IdempotencyWindow (see store.EnqueueAsync).
	IdempotencyKey string
	// Checked says the caller knows the function exists (the proxy's route
	// table); otherwise EnqueueAsync reads the read model.
	Checked bool
}

// EnqueueAsync accepts an asynchronous invocation: once it returns, the
// request and its delivery job are committed. created is false when the
// Idempotency-Key named an invocation accepted before, which is returned.
//
// Errors: EINVALID (a bad key or callback URL), ENOTFOUND (no such
// function), EUNPROCESSABLE (the key was used for another request),
// EUNAVAILABLE, EINTERNAL.
func (c *Commands) EnqueueAsync(ctx context.Context, in AsyncEnqueue) (store.AsyncInvocation, bool, error) {
	if in.IdempotencyKey != "" {
		if err := domain.ValidateIdempotencyKey(in.IdempotencyKey); err != nil {
			return store.AsyncInvocation{}, false, err
		}
	}
	if in.Request.CallbackURL != "" {
		if err := c.cfg.CallbackAllow.Check(in.Request.CallbackURL); err != nil {
			return store.AsyncInvocation{}, false, err
		}
	}
	if !in.Checked {
		if _, err := c.cfg.Store.GetFunction(ctx, in.Namespace, in.Function); err != nil {
			return store.AsyncInvocation{}, false, err
		}
	}
	now := c.now()
	inv := store.AsyncInvocation{ID: store.NewInvocationID(now), Namespace: in.Namespace, Function: in.Function,
		IdempotencyKey: in.IdempotencyKey, Request: in.Request, EnqueuedAt: now}
	return c.cfg.Store.EnqueueAsync(ctx, inv, requestHash(in.Request), tracedJob(ctx, deliver(in.Namespace, in.Function, inv.ID, now)))
}

// requestHash identifies a request for its Idempotency-Key: method, path,
// query and body (headers vary between retries of one client: tracing ids).
func requestHash(r store.AsyncRequest) []byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(r.Method), []byte(r.Path), []byte(r.Query), r.Body} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
		h.Write(part)
	}
	return h.Sum(nil)
}

func deliver(ns, function string, id uuid.UUID, ageFrom time.Time) river.InsertManyParams {
	return outbox.Job(outbox.DeliverArgs{Namespace: ns, Function: function, ID: id.String(), AgeFrom: ageFrom})
}

// DeadLetterTx records in tx that asynchronous invocation inv is a dead
// letter after its last attempt (nil: it was given up unattempted, for its
// age): the row's final state with the last answer, and AsyncDeadLettered
// on the function's stream (the audit log). The function being deleted
// meanwhile is not an error: its rows are gone.
//
// Errors: EUNAVAILABLE, EINTERNAL.
func (c *Commands) DeadLetterTx(ctx context.Context, tx *store.Tx, inv store.AsyncInvocation, last *store.AsyncAttempt, resp *store.AsyncResponse, reason string) error {
	now := c.now()
	if err := c.cfg.Store.FinishAsyncTx(ctx, tx.Tx, inv.ID, last, domain.AsyncDead, resp, reason, now); err != nil {
		return err
	}
	f := domain.NewFunction(inv.Namespace, inv.Function)
	_, err := change(ctx, tx, domain.FunctionStream(inv.Namespace, inv.Function), f, func() ([]domain.Event, error) {
		status := 0 // the last attempt's, else the last answer kept
		switch {
		case last != nil:
			status = last.Status
		case resp != nil:
			status = resp.Status
		}
		return f.DeadLetter(inv.ID.String(), inv.AttemptCount, status, reason, now)
	}, nil)
	if domain.ErrorCode(err) == domain.ENOTFOUND {
		return nil
	}
	return err
}

// RetryDeadLetter queues dead letter id of a function again: same
// invocation id, its attempts continue (a retry after the age limit gets
// one attempt before it is given up again).
//
// Errors: ENOTFOUND (no such function or dead letter), EUNAVAILABLE, EINTERNAL.
func (c *Commands) RetryDeadLetter(ctx context.Context, meta store.Metadata, in Ref, id uuid.UUID) error {
	now := c.now()
	_, _, err := run(ctx, c, meta, newFunction(in), func(tx *store.Tx, f *domain.Function) error {
		if err := changeFunction(ctx, tx, f, func() ([]domain.Event, error) { return f.RetryDeadLetter(id.String(), now) }); err != nil {
			return err
		}
		return c.cfg.Store.RequeueDeadLetterTx(ctx, tx.Tx, in.Namespace, in.Name, id, tracedJob(ctx, deliver(in.Namespace, in.Name, id, now)), now)
	})
	return err
}

// DeleteDeadLetters deletes dead letters of a function: ids, or all of them
// when ids is empty. It returns how many were deleted; deleting a dead
// letter that is not there is not an error (a DELETE of one id checks
// that itself).
//
// Errors: ENOTFOUND (no such function), EUNAVAILABLE, EINTERNAL.
func (c *Commands) DeleteDeadLetters(ctx context.Context, meta store.Metadata, in Ref, ids []uuid.UUID) (int, error) {
	now := c.now()
	var n int
	_, _, err := run(ctx, c, meta, newFunction(in), func(tx *store.Tx, f *domain.Function) error {
		if err := tx.Load(ctx, domain.FunctionStream(in.Namespace, in.Name), f); err != nil {
			return err
		}
		if !f.Exists {
			return domain.Errorf(domain.ENOTFOUND, "function %q not found", in.Name)
		}
		deleted, err := c.cfg.Store.DeleteDeadLettersTx(ctx, tx.Tx, in.Namespace, in.Name, ids)
		if err != nil {
			return err
		}
		n = len(deleted)
		names := make([]string, len(deleted))
		for i, id := range deleted {
			names[i] = id.String()
		}
		if len(ids) == 0 {
			names = nil // all: the event says so instead of listing them
		}
		_, err = decideAppend(ctx, tx, domain.FunctionStream(in.Namespace, in.Name), f, func() ([]domain.Event, error) {
			return f.DeleteDeadLetters(names, len(ids) == 0, n, now)
		}, nil)
		return err
	})
	return n, err
}
