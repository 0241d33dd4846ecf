package store

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/slessio/sless/domain"
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

// Cursor is a reader's place in the global log for ReadAll (or in one
// namespace's part of it for ReadNamespaceSince); the zero Cursor is the
// beginning.
type Cursor struct {
	TxID     uint64 `json:"tx_id"`
	Position int64  `json:"position"`
}

// String returns the cursor as "<tx id>-<position>" in decimal, e.g.
// "7713-40412": short, and safe in a header such as an event stream's
// Last-Event-ID. ParseCursor reads it back.
func (c Cursor) String() string {
	return strconv.FormatUint(c.TxID, 10) + "-" + strconv.FormatInt(c.Position, 10)
}

// ParseCursor reads a cursor written by Cursor.String; any other text,
// including "" and a number with a sign or a leading zero, is refused, so one
// cursor has exactly one form.
//
// Errors: EINVALID.
func ParseCursor(s string) (Cursor, error) {
	tx, pos, ok := strings.Cut(s, "-")
	txID, err1 := strconv.ParseUint(tx, 10, 64)
	position, err2 := strconv.ParseInt(pos, 10, 64)
	c := Cursor{TxID: txID, Position: position}
	if !ok || err1 != nil || err2 != nil || position < 0 || c.String() != s {
		return Cursor{}, domain.Errorf(domain.EINVALID, "event cursor: not a cursor of the event log (want <tx id>-<position>)")
	}
	return c, nil
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
