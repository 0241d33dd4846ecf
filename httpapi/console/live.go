package console

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/slessio/sless/store"
)

// Limits of a live stream.
const (
	liveBatch     = 200              // events read per poll
	liveHeartbeat = 15 * time.Second // a comment line keeps proxies from closing an idle stream
	// liveLookback is how long before a stream starts an invocation may have
	// started and still count as new when it is recorded after the start.
	liveLookback = 5 * time.Minute
)

// change is the data of an SSE "change" event: which stream changed how.
type change struct {
	Stream   string `json:"stream"`
	Type     string `json:"type"`
	Position int64  `json:"position"`
}

// live serves GET /console/{ns}/live[?after=cursor]: Server-Sent Events
// following the namespace's part of the event store from the cursor the
// page was rendered at (a reconnect resumes from Last-Event-ID, so no event
// is lost), each as "change" with the event's cursor as its id, and an
// "invocations" event when new rows reach the invocation log. The reader
// guarantees events of a late commit are not skipped (store.ReadNamespaceSince).
func (c *Console) live(w http.ResponseWriter, r *http.Request, s session) error {
	ctx, ns := r.Context(), r.PathValue("ns")
	cur, err := c.liveCursor(r, ns)
	if err != nil {
		return err
	}
	since := c.cfg.Now().Add(-liveLookback)
	count, last, err := c.cfg.Store.InvocationMark(ctx, ns, since)
	if err != nil {
		return err
	}
	rc := http.NewResponseController(w)
	// The server's read timeout is meant for request bodies, not for a
	// stream that stays open while the page does.
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 2000\n: connected\n\n"); err != nil {
		return errClientGone
	}
	if err := rc.Flush(); err != nil {
		return errClientGone
	}
	poll := time.NewTicker(c.cfg.LivePoll)
	defer poll.Stop()
	beat := time.Now()
	for {
		select {
		case <-ctx.Done():
			return errClientGone
		case <-c.closing:
			return nil
		case <-poll.C:
		}
		evs, next, err := c.cfg.Store.ReadNamespaceSince(ctx, ns, cur, liveBatch)
		if err != nil {
			if ctx.Err() != nil {
				return errClientGone
			}
			c.log.WarnContext(ctx, "console: live events", "namespace", ns, "err", err)
			continue // the next poll tries again
		}
		wrote := false
		for _, e := range evs {
			data, _ := json.Marshal(change{Stream: e.StreamID, Type: e.Type, Position: e.Position})
			id := store.Cursor{TxID: e.TxID, Position: e.Position}.String()
			if _, err := fmt.Fprintf(w, "id: %s\nevent: change\ndata: %s\n\n", id, data); err != nil {
				return errClientGone
			}
			wrote = true
		}
		cur = next
		n, l, err := c.cfg.Store.InvocationMark(ctx, ns, since)
		if err == nil && (n != count || !l.Equal(last)) {
			count, last = n, l
			if _, err := fmt.Fprint(w, "event: invocations\ndata: {}\n\n"); err != nil {
				return errClientGone
			}
			wrote = true
		}
		if !wrote && time.Since(beat) >= liveHeartbeat {
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return errClientGone
			}
			wrote = true
		}
		if wrote {
			beat = time.Now()
			if err := rc.Flush(); err != nil {
				return errClientGone
			}
		}
	}
}

// liveCursor is where a stream starts: Last-Event-ID on a reconnect, the
// page's ?after= on the first connection, else the namespace's newest event.
func (c *Console) liveCursor(r *http.Request, ns string) (store.Cursor, error) {
	raw := r.Header.Get("Last-Event-ID")
	if raw == "" {
		raw = r.URL.Query().Get("after")
	}
	if raw == "" {
		return c.cfg.Store.NamespaceHead(r.Context(), ns)
	}
	return store.ParseCursor(raw)
}
