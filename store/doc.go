// Package store is the PostgreSQL side of sless: the event store (the `events`
// table, the source of truth), River as the outbox, and the read models built from
// events.
//
// # Event store
//
// Every change is an event appended to a stream ("<kind>:<namespace>/<name>", see
// domain.FunctionStream) with the version the writer expects the stream to be at;
// UNIQUE (stream_id, stream_version) turns a concurrent write into a domain
// CONFLICT (optimistic concurrency). Each event also gets a global position and
// the id of the transaction that wrote it (tx_id, xid8).
//
// Positions are taken before commit, so they can commit out of order: a reader
// that remembers "last position seen" can skip an event committed late. ReadAll
// therefore follows a (tx_id, position) cursor and only returns events of
// transactions older than every transaction still running
// (tx_id < pg_snapshot_xmin(pg_current_snapshot())): such events can no longer be
// joined by anything that would sort before them.
//
// # Outbox
//
// Side effects are River jobs inserted in the append's transaction (Append's jobs
// argument, or AppendTx + InsertJobsTx inside InTx): a job exists if and only if
// its events committed. River ≥ 0.49 leaves a transaction whose *Tx call failed to
// the caller, so every error here ends in a rollback.
//
// # Projections
//
// A Projector set with SetProjector runs for each append inside its
// transaction, so read models are always exactly as new as the events. The
// installed one, Project, writes an object's row from its aggregate folded
// through the new events (Tx.Append passes the one it folded; a plain Append
// lets Project fold the stream, as RebuildProjections does while replaying):
// the lifecycle rules live in domain's Apply only, and a test replays random
// histories to check rows == fold. A new event type needs its Apply case and,
// when it adds a column or a history row, a line in projection.go.
//
// # Routes
//
// The store announces on the PostgreSQL channel RoutesChannel every function
// whose route (endpoint, phase, http triggers) may have changed, once the
// change is committed: a command's after its COMMIT, in groups with the
// commits that land meanwhile (a NOTIFY inside the transaction would
// serialise the commits); ListenRoutes follows them and ListRoutes /
// GetRoute read routes, so the invoke proxy keeps its table in memory.
//
// # Invocation log
//
// The invocations table is not a projection: an invocation is not an event.
// InvocationWriter batches records off the request path (COPY every 1,000
// rows or 100 ms, dropping and counting rather than blocking when the buffer
// is full); the table is partitioned by UTC day, EnsureInvocationPartitions
// creates days ahead and DropInvocationPartitionsBefore enforces retention;
// ListInvocations pages newest first on a (started_at, id) keyset.
//
// # Console
//
// The web console's sessions are rows of console_sessions keyed by the
// SHA-256 of the session id (CreateSession, GetSession, DeleteSession), so
// signing out refuses the cookie on every replica. Its live view follows one
// namespace with ReadNamespaceSince, ReadAll's rule on the index (namespace,
// tx_id, position), starting at NamespaceHead, with Cursor.String as the
// event stream's Last-Event-ID; InvocationHistogram and InvocationMark feed
// its charts from the invocation log.
//
// store imports domain, pgx, River and google/uuid.
package store
