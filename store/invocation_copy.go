package store

import (
	"encoding/binary"
	"strings"
	"time"

	"github.com/google/uuid"
)

// invocationCopySQL starts the COPY that the writer feeds with copyEncoder's stream.
var invocationCopySQL = "COPY invocations (" + strings.Join(invocationCopyColumns, ", ") + ") FROM STDIN (FORMAT binary)"

// invocationReplayCopySQL and invocationReplayInsertSQL store a COPY stream
// again without storing a record twice (InvocationWriter.insertIdempotent):
// into a temporary table, then into the log, skipping ids stored already.
// A stream whose rows have fewer fields was spooled before migration 00014
// and is replayed with the columns it has (replaySQL).
func replaySQL(stream []byte) (copySQL, insertSQL string) {
	cols := invocationCopyColumns
	// The header is 19 bytes; each row starts with its field count.
	if len(stream) >= 21 && int(binary.BigEndian.Uint16(stream[19:21])) == len(invocationCopyColumnsBefore14) {
		cols = invocationCopyColumnsBefore14
	}
	list := strings.Join(cols, ", ")
	return "COPY invocations_replay (" + list + ") FROM STDIN (FORMAT binary)",
		"INSERT INTO invocations (" + list + ") SELECT " + list + " FROM invocations_replay ON CONFLICT DO NOTHING"
}

// pgEpochMicros is 2000-01-01 UTC, where PostgreSQL's binary timestamps
// count from, in Unix microseconds.
const pgEpochMicros = 946_684_800 * 1_000_000

// copyEncoder writes rows in PostgreSQL's binary COPY format into one
// reusable buffer. The writer used pgx's CopyFrom before, which boxes every
// value into an interface and encodes it through the type map: twelve
// allocations and about 600 ns per record, a visible share of what the proxy
// spends on a request. The invocations table has fixed column types, so the
// encoding can be spelt out; a migration that changes one must change this
// file too (most mismatches make the server refuse the COPY with "incorrect
// binary data format").
//
// Text goes as its bytes, as pgx sent it: the server rejects invalid UTF-8
// and NUL bytes in either case (normalize removes NUL from the log, which
// holds arbitrary output). No column is nullable, so no value is NULL.
type copyEncoder struct {
	buf []byte
}

// invocations replaces the buffer's content by a whole COPY stream of invs,
// in the order of invocationCopyColumns.
func (e *copyEncoder) invocations(invs []Invocation) {
	e.buf = append(e.buf[:0], "PGCOPY\n\xff\r\n\x00"...)
	e.buf = binary.BigEndian.AppendUint32(e.buf, 0) // flags: no OIDs
	e.buf = binary.BigEndian.AppendUint32(e.buf, 0) // no header extension
	for i := range invs {
		inv := &invs[i]
		e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(len(invocationCopyColumns)))
		e.uuid(inv.ID)
		e.text(inv.Namespace)
		e.text(inv.Function)
		e.int4(int32(inv.Version))
		e.text(string(inv.Trigger))
		e.text(inv.Method)
		e.text(inv.Path)
		e.int4(int32(inv.Status))
		e.int8(inv.Duration.Microseconds())
		e.boolean(inv.ColdStart)
		e.int8(inv.BytesIn)
		e.int8(inv.BytesOut)
		e.text(inv.Error)
		e.text(inv.Log)
		e.timestamptz(inv.StartedAt)
		e.timestamptz(inv.EndedAt)
		if inv.AsyncID == (uuid.UUID{}) {
			e.null()
		} else {
			e.uuid(inv.AsyncID)
		}
		e.int4(int32(inv.Attempt))
	}
	e.buf = binary.BigEndian.AppendUint16(e.buf, 0xffff) // the trailer: a field count of -1
}

// Each value is its length (int32) and its bytes, big-endian.

func (e *copyEncoder) uuid(id uuid.UUID) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, 16)
	e.buf = append(e.buf, id[:]...)
}

// null is a NULL value: a length of -1 and no bytes.
func (e *copyEncoder) null() {
	e.buf = binary.BigEndian.AppendUint32(e.buf, 0xffffffff)
}

func (e *copyEncoder) text(s string) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *copyEncoder) int4(v int32) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, 4)
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v))
}

func (e *copyEncoder) int8(v int64) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, 8)
	e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v))
}

func (e *copyEncoder) boolean(v bool) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, 1)
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// timestamptz sends t as microseconds since 2000-01-01 UTC, truncating
// nanoseconds as pgx did (normalize has truncated them already).
func (e *copyEncoder) timestamptz(t time.Time) {
	e.int8(t.UnixMicro() - pgEpochMicros)
}
