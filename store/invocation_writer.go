package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/slessio/sless/domain"
)

// Defaults of InvocationWriterOptions.
const (
	DefaultInvocationBuffer    = 16384
	DefaultInvocationBatch     = 1000
	DefaultInvocationFlush     = 100 * time.Millisecond
	invocationWriteTimeout     = 30 * time.Second
	invocationWriteAttempts    = 3
	invocationDropLogInterval  = 10 * time.Second
	invocationPartitionsBehind = 1 // days of partitions made at start, besides today
	invocationPartitionsAhead  = 2
	invocationCopyBufferKept   = 4 << 20 // bytes of COPY stream kept for the next batch
)

// InvocationWriterOptions tunes an InvocationWriter; zero values take the defaults.
type InvocationWriterOptions struct {
	// Buffer is how many records may wait to be written (16,384). When it is
	// full, Record drops the record rather than make the caller wait.
	Buffer int
	// BatchSize is how many records one COPY writes at most (1,000).
	BatchSize int
	// FlushInterval is the longest a record waits for its batch (100 ms).
	FlushInterval time.Duration
	// Logger receives write failures and drops; nil means slog.Default().
	Logger *slog.Logger
}

// InvocationWriterStats counts what a writer did with the records it got.
type InvocationWriterStats struct {
	Written uint64 // stored
	Dropped uint64 // refused by Record: buffer full, or the writer closed
	Failed  uint64 // lost because the database refused them after retries
}

// InvocationWriter records invocations off the request path: Record appends
// a record to a buffer and returns at once; one goroutine writes the buffer
// with COPY every BatchSize records or FlushInterval, creating the daily
// partitions it needs. Close writes what is left. It is safe for concurrent use.
//
// The buffer is a slice under a mutex rather than a channel: a channel send
// wakes the writer for every record, and on a small machine those wake-ups
// cost the proxy more than the COPY. Record wakes the writer only for the
// first record after a write (to start the FlushInterval clock) and for a
// full batch.
type InvocationWriter struct {
	s    *Store
	opts InvocationWriterOptions
	log  *slog.Logger

	mu      sync.Mutex
	pending []Invocation // waiting for the writer
	inHand  int          // taken by the writer, not yet written; counts against Buffer
	closed  bool         // Close was called: Record refuses

	wake     chan struct{} // a first record or a full batch is pending
	flushReq chan chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	written, dropped, failed atomic.Uint64
	lastDropLog              atomic.Int64

	days  map[time.Time]bool // partitions known to exist; owned by run
	spare []Invocation       // the batch slice of run, swapped with pending
	enc   copyEncoder        // the COPY stream of the batch being written; owned by run
	copyR bytes.Reader       // reads enc's buffer to the connection
}

// NewInvocationWriter starts a writer of s's invocation log. Stop it with Close.
func (s *Store) NewInvocationWriter(opts InvocationWriterOptions) *InvocationWriter {
	if opts.Buffer <= 0 {
		opts.Buffer = DefaultInvocationBuffer
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultInvocationBatch
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultInvocationFlush
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	w := &InvocationWriter{
		s: s, opts: opts, log: opts.Logger,
		wake:     make(chan struct{}, 1),
		flushReq: make(chan chan struct{}),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
		days:     map[time.Time]bool{},
	}
	go w.run()
	return w
}

// Record queues inv to be written and reports whether it was queued. It never
// blocks: when the buffer is full (the database is slow or down) the record
// is dropped, counted in Stats().Dropped and logged at most every 10 s.
// Missing fields are filled in when the record is written: ID (a UUIDv7 of
// StartedAt), StartedAt (now), EndedAt (StartedAt + Duration), Trigger (http).
func (w *InvocationWriter) Record(inv Invocation) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.drop("the invocation writer is closed")
		return false
	}
	if len(w.pending)+w.inHand >= w.opts.Buffer {
		w.mu.Unlock()
		w.drop("the invocation log buffer is full")
		return false
	}
	w.pending = append(w.pending, inv)
	n := len(w.pending)
	w.mu.Unlock()
	if n == 1 || n%w.opts.BatchSize == 0 {
		select {
		case w.wake <- struct{}{}:
		default: // a wake-up is pending already; the writer looks at the buffer when it takes it
		}
	}
	return true
}

func (w *InvocationWriter) drop(why string) {
	n := w.dropped.Add(1)
	now := time.Now().UnixNano()
	last := w.lastDropLog.Load()
	if now-last >= int64(invocationDropLogInterval) && w.lastDropLog.CompareAndSwap(last, now) {
		w.log.Warn("dropping invocation records", "reason", why, "dropped_total", n)
	}
}

// Stats returns the counters of the writer.
func (w *InvocationWriter) Stats() InvocationWriterStats {
	return InvocationWriterStats{Written: w.written.Load(), Dropped: w.dropped.Load(), Failed: w.failed.Load()}
}

// Flush writes every record queued before the call and returns when they
// are stored (or failed), or when ctx ends.
//
// Errors: EUNAVAILABLE when ctx ends or the writer is closed.
func (w *InvocationWriter) Flush(ctx context.Context) error {
	reply := make(chan struct{})
	select {
	case w.flushReq <- reply:
	case <-w.done:
		return domain.Errorf(domain.EUNAVAILABLE, "the invocation writer is closed")
	case <-ctx.Done():
		return domain.Errorf(domain.EUNAVAILABLE, "flush invocations: %v", ctx.Err())
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return domain.Errorf(domain.EUNAVAILABLE, "flush invocations: %v", ctx.Err())
	}
}

// Close stops taking records, writes those queued and returns when they are
// stored, or when ctx ends (the rest is then written in the background).
// Records passed to Record after Close are dropped.
//
// Errors: ctx's error when it ends first.
func (w *InvocationWriter) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stop) })
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the writer's goroutine: it writes the buffer when a batch is full,
// FlushInterval after its first record, on Flush and on Close.
func (w *InvocationWriter) run() {
	defer close(w.done)
	w.ensureDays(time.Now().AddDate(0, 0, -invocationPartitionsBehind), time.Now().AddDate(0, 0, invocationPartitionsAhead))
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	for {
		select {
		case <-w.wake:
			w.mu.Lock()
			n := len(w.pending)
			w.mu.Unlock()
			switch {
			case n >= w.opts.BatchSize:
				w.writePending()
			case n > 0 && !armed:
				timer.Reset(w.opts.FlushInterval)
				armed = true
			}
		case <-timer.C:
			armed = false
			w.writePending()
		case reply := <-w.flushReq:
			w.writePending()
			close(reply)
		case <-w.stop:
			w.writePending()
			return
		}
	}
}

// writePending writes every record in the buffer, BatchSize at a time. The
// records taken stay counted against Buffer until they are written, so a
// stalled database bounds what waits in memory.
func (w *InvocationWriter) writePending() {
	w.mu.Lock()
	all := w.pending
	w.pending, w.inHand = w.spare[:0], len(all)
	w.mu.Unlock()
	for batch := all; len(batch) > 0; {
		n := min(len(batch), w.opts.BatchSize)
		w.write(batch[:n])
		clear(batch[:n]) // let the strings go
		batch = batch[n:]
		w.mu.Lock()
		w.inHand -= n
		w.mu.Unlock()
	}
	w.spare = all[:0]
}

// write stores batch with COPY, retrying a failed write twice.
func (w *InvocationWriter) write(batch []Invocation) {
	for i := range batch {
		batch[i].normalize()
		if d := day(batch[i].StartedAt); !w.days[d] {
			w.ensureDays(d, d)
		}
	}
	w.enc.invocations(batch)
	defer func() { // a batch of long logs may need a large buffer once; the next ones should not hold it
		if cap(w.enc.buf) > invocationCopyBufferKept {
			w.enc.buf = nil
		}
	}()
	var err error
	for attempt := 1; attempt <= invocationWriteAttempts; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), invocationWriteTimeout)
		err = w.copy(ctx)
		cancel()
		if err == nil {
			w.written.Add(uint64(len(batch)))
			return
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23514" { // no partition for a row: dropped meanwhile
			clear(w.days)
			for i := range batch {
				w.ensureDays(batch[i].StartedAt, batch[i].StartedAt)
			}
		}
		if attempt < invocationWriteAttempts {
			time.Sleep(time.Duration(attempt*attempt) * 100 * time.Millisecond)
		}
	}
	w.failed.Add(uint64(len(batch)))
	w.log.Error("invocation records lost: the database refused them", "records", len(batch), "error", err)
}

// ensureDays creates the partitions of from's through to's days, remembering success.
func (w *InvocationWriter) ensureDays(from, to time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), invocationWriteTimeout)
	defer cancel()
	if err := w.s.EnsureInvocationPartitions(ctx, from, to); err != nil {
		w.log.Warn("cannot create invocation log partitions", "error", err)
		return
	}
	for d := day(from); !d.After(day(to)); d = d.AddDate(0, 0, 1) {
		w.days[d] = true
	}
}

// copy sends the encoded batch with one COPY.
func (w *InvocationWriter) copy(ctx context.Context) error {
	conn, err := w.s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	w.copyR.Reset(w.enc.buf)
	defer w.copyR.Reset(nil)
	_, err = conn.Conn().PgConn().CopyFrom(ctx, &w.copyR, invocationCopySQL)
	return err
}
