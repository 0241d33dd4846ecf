package store

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/slessio/sless/domain"
)

// Enqueues without an Idempotency-Key are committed in groups: the ones
// that arrive while a commit is under way go together in the next one (one
// COPY of their rows, one insert of their River jobs, one COMMIT), and each
// caller is answered once the group's COMMIT returned. Alone, an enqueue is
// a transaction of its own as before; under load, the cost of a
// transaction, a River insert and their round trips is shared.
const (
	asyncCommitters = 4   // groups committing at once
	asyncGroupMax   = 256 // enqueues in one group at most
	// asyncGroupTimeout bounds one group's commit.
	asyncGroupTimeout = 30 * time.Second
)

// asyncEnqueue is one enqueue waiting for its group's commit.
type asyncEnqueue struct {
	inv     AsyncInvocation
	hash    []byte
	headers []byte
	job     river.InsertManyParams
	done    chan error
}

// asyncGroups is the queue of enqueues waiting for a commit, and its
// committers (started on the first enqueue).
type asyncGroups struct {
	once  sync.Once
	queue chan *asyncEnqueue
}

// enqueueGrouped commits inv (without a key) and its job in a group.
func (s *Store) enqueueGrouped(ctx context.Context, inv AsyncInvocation, hash, headers []byte, job river.InsertManyParams) error {
	s.async.once.Do(func() {
		s.async.queue = make(chan *asyncEnqueue, asyncGroupMax*asyncCommitters)
		for range asyncCommitters {
			go s.commitGroups()
		}
	})
	e := &asyncEnqueue{inv: inv, hash: hash, headers: headers, job: job, done: make(chan error, 1)}
	select {
	case s.async.queue <- e:
	case <-ctx.Done():
		return domain.Errorf(domain.EUNAVAILABLE, "enqueue async invocation: %v", ctx.Err())
	}
	// Once queued, the answer is the commit's: a caller that leaves may
	// find its invocation stored, as with any answer lost on the way.
	return <-e.done
}

// commitGroups commits the queued enqueues, a group at a time, for good.
func (s *Store) commitGroups() {
	group := make([]*asyncEnqueue, 0, asyncGroupMax)
	for first := range s.async.queue {
		group = append(group[:0], first)
	more:
		for len(group) < asyncGroupMax {
			select {
			case e := <-s.async.queue:
				group = append(group, e)
			default:
				break more
			}
		}
		err := s.commitGroup(group)
		for _, e := range group {
			e.done <- err
		}
	}
}

// commitGroup stores a group's rows and jobs in one transaction.
func (s *Store) commitGroup(group []*asyncEnqueue) error {
	// Its callers wait: a database that hangs gets them an error in time.
	ctx, cancel := context.WithTimeout(context.Background(), asyncGroupTimeout)
	defer cancel()
	rows := make([][]any, len(group))
	jobs := make([]river.InsertManyParams, len(group))
	for i, e := range group {
		body := e.inv.Request.Body
		if body == nil {
			body = []byte{} // bytea NOT NULL
		}
		rows[i] = []any{e.inv.ID, e.inv.Namespace, e.inv.Function, e.hash, e.inv.Request.Method, e.inv.Request.Path,
			e.inv.Request.Query, json.RawMessage(e.headers), body, e.inv.Request.CallbackURL, e.inv.Request.RemoteAddr,
			e.inv.Request.Host, string(domain.AsyncQueued), e.inv.EnqueuedAt, e.inv.EnqueuedAt}
		jobs[i] = e.job
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"async_invocations"}, []string{"id", "namespace", "function", "request_hash",
			"method", "path", "query", "headers", "body", "callback_url", "remote_addr", "host", "state", "enqueued_at", "updated_at"},
			pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		_, err := s.InsertJobsTx(ctx, tx, jobs)
		return err
	})
	return dbError("enqueue async invocations", err)
}

// encodeHeaders is the JSON of a request's headers as the row keeps them.
func encodeHeaders(h map[string][]string) ([]byte, error) {
	if h == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(h)
	if err != nil {
		return nil, domain.Errorf(domain.EINTERNAL, "encode headers: %v", err)
	}
	return b, nil
}
