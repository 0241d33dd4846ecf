package wire

import (
	"encoding/json"
	"time"
)

// Event is one entry of a namespace's audit log.
type Event struct {
	// Position orders every event of the server; ?after= takes it.
	Position int64 `json:"position"`
	// Stream is the aggregate's stream id, e.g. "function:{ns}/hello".
	Stream        string          `json:"stream"`
	StreamVersion int64           `json:"stream_version"`
	Type          string          `json:"type"`
	Data          json.RawMessage `json:"data"`
	Actor         string          `json:"actor"`
	RequestID     string          `json:"request_id,omitempty"`
	RecordedAt    time.Time       `json:"recorded_at"`
}

// EventList is a page of the audit log, oldest first.
type EventList struct {
	Events []Event `json:"events"`
	// NextAfter is the ?after= of the next page; a page with no events
	// returns the after it was given.
	NextAfter int64 `json:"next_after"`
}
