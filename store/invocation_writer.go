package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
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
	invocationSpoolTimeout     = 2 * time.Second // a write's timeout when a spool can take the batch
	invocationReplayTimeout    = 5 * time.Second // the timeout of writing one spooled batch
	invocationSpoolRetry       = time.Second     // how often a spool waiting for the database tries it
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
	// SpoolDir is where batches wait while the database cannot take them
	// (see invocationSpool); they are written, in order, when it can.
	// "" means no spool: a batch the database refuses three times is lost.
	SpoolDir string
	// SpoolBytes bounds the spool (DefaultInvocationSpoolBytes): past it,
	// batches are lost, counted in Stats().Failed and logged once.
	SpoolBytes int64
}

// InvocationWriterStats counts what a writer did with the records it got.
type InvocationWriterStats struct {
	Written uint64 // stored
	Dropped uint64 // refused by Record: buffer full, or the writer closed
	Failed  uint64 // lost: the database refused them and no spool could keep them
	Spooled uint64 // waiting in the spool for the database, now
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

	spool      *invocationSpool   // nil without a spool; owned by run
	replayReq  chan chan struct{} // asks the replayer to try the spool now; closed when it tried
	stopReplay chan struct{}      // closed by run when it is done: the replayer tries a last time and ends
	replayDone chan struct{}
	lossLogged atomic.Bool        // a loss was logged and nothing was stored since
	days       map[time.Time]bool // partitions known to exist; owned by run
	batchDays  []time.Time        // the days of the batch being written; owned by run
	spare      []Invocation       // the batch slice of run, swapped with pending
	enc        copyEncoder        // the COPY stream of the batch being written; owned by run
	copyR      bytes.Reader       // reads enc's buffer to the connection
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
	if opts.SpoolDir != "" {
		if opts.SpoolBytes <= 0 {
			opts.SpoolBytes = DefaultInvocationSpoolBytes
		}
		spool, err := openSpool(opts.SpoolDir, opts.SpoolBytes)
		if err != nil {
			w.log.Error("the invocation log has no spool: records the database cannot take will be lost", "dir", opts.SpoolDir, "error", err)
		} else {
			w.spool = spool
			w.replayReq, w.stopReplay, w.replayDone = make(chan chan struct{}), make(chan struct{}), make(chan struct{})
			go w.replayer()
		}
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
	st := InvocationWriterStats{Written: w.written.Load(), Dropped: w.dropped.Load(), Failed: w.failed.Load()}
	if w.spool != nil {
		st.Spooled = w.spool.records.Load()
	}
	return st
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
			w.tryReplay()
			close(reply)
		case <-w.stop:
			w.writePending()
			if w.spool != nil {
				close(w.stopReplay)
				<-w.replayDone
			}
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

// write stores batch with COPY, retrying a failed write twice. With a
// spool, a batch the database cannot take now (it is down, restarting or
// too slow) is spooled at once rather than retried, and while the spool
// holds batches a new one joins them, so the log is written in the order it
// was recorded and the writer never waits for a database that is away.
func (w *InvocationWriter) write(batch []Invocation) {
	behind := w.spool != nil && !w.spool.empty()
	from, to := w.prepare(batch, !behind)
	w.enc.invocations(batch)
	defer func() { // a batch of long logs may need a large buffer once; the next ones should not hold it
		if cap(w.enc.buf) > invocationCopyBufferKept {
			w.enc.buf = nil
		}
	}()
	if behind {
		w.toSpool(len(batch), from, to, nil)
		return
	}
	timeout := invocationWriteTimeout
	if w.spool != nil {
		timeout = invocationSpoolTimeout
	}
	var err error
	for attempt := 1; attempt <= invocationWriteAttempts; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		err = w.copy(ctx)
		if isUniqueViolation(err) { // an earlier attempt was stored after all: keep the rest
			err = w.insertIdempotent(ctx, w.enc.buf)
		}
		cancel()
		if err == nil {
			w.written.Add(uint64(len(batch)))
			w.lossLogged.Store(false)
			return
		}
		if w.spool != nil && transient(err) {
			w.toSpool(len(batch), from, to, err)
			return
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23514" { // no partition for a row: dropped meanwhile
			clear(w.days)
			w.ensureBatchDays()
		}
		if attempt < invocationWriteAttempts {
			time.Sleep(time.Duration(attempt*attempt) * 100 * time.Millisecond)
		}
	}
	w.lose(len(batch), "the database refused them", err)
}

// prepare fills in the batch's records (normalize), makes the partitions
// of their days unless known to exist (when ensure is set; a spooled batch
// gets them when it is replayed), and returns the first and last day.
func (w *InvocationWriter) prepare(batch []Invocation, ensure bool) (from, to time.Time) {
	w.batchDays = w.batchDays[:0]
	for i := range batch {
		batch[i].normalize()
		d := day(batch[i].StartedAt)
		if i == 0 || d.Before(from) {
			from = d
		}
		if i == 0 || d.After(to) {
			to = d
		}
		if !slices.Contains(w.batchDays, d) {
			w.batchDays = append(w.batchDays, d)
		}
	}
	if ensure {
		w.ensureBatchDays()
	}
	return from, to
}

// ensureBatchDays makes the partitions of the batch's days unless known to
// exist, giving up at the first failure (the database is away: the write
// will tell).
func (w *InvocationWriter) ensureBatchDays() {
	for _, d := range w.batchDays {
		if !w.days[d] && !w.ensureDays(d, d) {
			return
		}
	}
}

// toSpool spools the encoded batch of n records, whose write failed with
// cause (nil: it waited behind the spool), or counts it lost.
func (w *InvocationWriter) toSpool(n int, from, to time.Time, cause error) {
	err := w.spool.put(w.enc.buf, n, from, to)
	if err != nil {
		w.lose(n, "the database cannot take them and the spool cannot keep them", errors.Join(cause, err))
		return
	}
	if cause != nil && w.spool.records.Load() == uint64(n) { // the first batch of an outage
		w.log.Warn("the database cannot take invocation records; spooling them to disk until it can",
			"dir", w.spool.dir, "error", cause)
	}
}

// replayer is the spool's goroutine: while the spool holds batches, it
// tries every second to write them to the database, oldest first.
func (w *InvocationWriter) replayer() {
	defer close(w.replayDone)
	tick := time.NewTicker(invocationSpoolRetry)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			w.replay()
		case reply := <-w.replayReq:
			w.replay()
			close(reply)
		case <-w.stopReplay:
			w.replay() // a last try; what is left waits for the next process
			return
		}
	}
}

// tryReplay asks the replayer to try the spool now and waits until it did.
func (w *InvocationWriter) tryReplay() {
	if w.spool == nil {
		return
	}
	reply := make(chan struct{})
	w.replayReq <- reply
	<-reply
}

// replay writes the spool's batches to the database, oldest first, until
// it is empty or the database cannot take them. A batch the database
// refuses for what it holds rather than for being away is lost, not
// retried for ever.
func (w *InvocationWriter) replay() {
	written := 0
	for {
		f, stream, ok, err := w.spool.oldest()
		if !ok {
			break
		}
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), invocationReplayTimeout)
			if err = w.spoolDays(ctx, f); err == nil {
				err = w.insertIdempotent(ctx, stream)
			}
			cancel()
		}
		switch {
		case err == nil:
			w.written.Add(uint64(f.records))
			written += f.records
		case transient(err):
			return
		default:
			w.lose(f.records, "the database refused a spooled batch", err)
		}
		if err := w.spool.removeOldest(f); err != nil {
			w.log.Error("cannot remove a replayed invocation spool file; its records may be written twice (harmless) at the next start", "file", f.name, "error", err)
		}
	}
	if written > 0 {
		w.lossLogged.Store(false)
		w.log.Info("the invocation spool is written", "records", written)
	}
}

// spoolDays makes the partitions a spooled batch needs: those of its first
// through last day (or, for a batch spanning more than a year, which no
// log written at the time of its invocations does, of those two days).
func (w *InvocationWriter) spoolDays(ctx context.Context, f spoolFile) error {
	if f.to.Sub(f.from) <= 366*24*time.Hour {
		return w.s.EnsureInvocationPartitions(ctx, f.from, f.to)
	}
	return errors.Join(w.s.EnsureInvocationPartitions(ctx, f.from, f.from), w.s.EnsureInvocationPartitions(ctx, f.to, f.to))
}

// lose counts n records lost and logs it, once until something is stored again.
func (w *InvocationWriter) lose(n int, why string, err error) {
	w.failed.Add(uint64(n))
	if w.lossLogged.CompareAndSwap(false, true) {
		w.log.Error("invocation records lost: "+why, "records", n, "lost_total", w.failed.Load(), "error", err)
	}
}

// transient reports whether err says the database is unreachable or slow
// now rather than that it refuses the records.
func transient(err error) bool {
	return unavailable(err) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err)
}

func isUniqueViolation(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23505"
}

// ensureDays creates the partitions of from's through to's days, remembering
// success, which it reports.
func (w *InvocationWriter) ensureDays(from, to time.Time) bool {
	ctx, cancel := context.WithTimeout(context.Background(), invocationSpoolTimeout)
	defer cancel()
	if err := w.s.EnsureInvocationPartitions(ctx, from, to); err != nil {
		w.log.Warn("cannot create invocation log partitions", "error", err)
		return false
	}
	for d := day(from); !d.After(day(to)); d = d.AddDate(0, 0, 1) {
		w.days[d] = true
	}
	return true
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

// insertIdempotent stores a COPY stream's records except those stored
// already (same id; the unique index on the log makes that a conflict): a
// spooled batch may have been stored before a crash removed its file, and
// a COPY whose answer was lost may have been stored too.
func (w *InvocationWriter) insertIdempotent(ctx context.Context, stream []byte) error {
	conn, err := w.s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit it does nothing
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE invocations_replay (LIKE invocations INCLUDING DEFAULTS) ON COMMIT DROP`); err != nil {
		return err
	}
	copySQL, insertSQL := replaySQL(stream)
	if _, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(stream), copySQL); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, insertSQL); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
