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
// A Projector set with SetProjector runs for each appended event inside the append
// transaction, so read models are always exactly as new as the events.
//
// store imports domain, pgx and River.
package store
