package store

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Metadata records who caused an event and why; it is stored with every event.
type Metadata struct {
	Actor       string `json:"actor,omitempty"`        // the authenticated subject, or a worker's name
	RequestID   string `json:"request_id,omitempty"`   // the API request that led to the event
	CausationID string `json:"causation_id,omitempty"` // e.g. the River job id that appended it
}

// NewEvent is an event to append. Data is marshalled with encoding/json; a
// json.RawMessage is stored as it is (it must be valid JSON).
type NewEvent struct {
	Type string
	Data any
}

// Event is a stored event.
type Event struct {
	Position      int64           `json:"position"`
	TxID          uint64          `json:"tx_id"`
	StreamID      string          `json:"stream_id"`
	StreamVersion int64           `json:"stream_version"`
	Namespace     string          `json:"namespace"`
	Type          string          `json:"type"`
	Data          json.RawMessage `json:"data"`
	Metadata      Metadata        `json:"metadata"`
	RecordedAt    time.Time       `json:"recorded_at"`
}

// Cursor is a reader's place in the global log for ReadAll; the zero Cursor is
// the beginning.
type Cursor struct {
	TxID     uint64 `json:"tx_id"`
	Position int64  `json:"position"`
}

// Projector updates read models for events just appended to one stream, in
// order, inside the append's transaction; state is the stream's aggregate
// folded through the last of them, or nil when the append came without one
// (Store.Append, AppendTx). An error rolls the whole append back.
type Projector func(ctx context.Context, tx pgx.Tx, evs []Event, state Aggregate) error

// NamespaceOf returns the namespace of a stream id "<kind>:<namespace>/<name>",
// or "" when the id has no such form.
func NamespaceOf(streamID string) string {
	_, rest, ok := strings.Cut(streamID, ":")
	if !ok {
		return ""
	}
	ns, _, ok := strings.Cut(rest, "/")
	if !ok {
		return ""
	}
	return ns
}

// eventColumns is the column list scanEvent expects.
const eventColumns = `position, tx_id, stream_id, stream_version, namespace, type, data, metadata, recorded_at`

// scanEvent turns one events row (eventColumns) into an Event.
func scanEvent(row pgx.CollectableRow) (Event, error) {
	var ev Event
	var data, meta []byte
	err := row.Scan(&ev.Position, &ev.TxID, &ev.StreamID, &ev.StreamVersion, &ev.Namespace,
		&ev.Type, &data, &meta, &ev.RecordedAt)
	if err != nil {
		return Event{}, err
	}
	ev.Data = json.RawMessage(data)
	if err := json.Unmarshal(meta, &ev.Metadata); err != nil {
		return Event{}, err
	}
	return ev, nil
}
