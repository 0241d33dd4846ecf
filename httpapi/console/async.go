package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// Sizes of a function page's Async section.
const (
	// queuedShown is how many of the newest queued invocations are listed.
	queuedShown = 5
	// asyncCounted bounds the rows read to count queued work and to list
	// dead letters: the store has no count, and its rows carry the
	// requests' and answers' bodies. Past it the count says "N+".
	asyncCounted = 20
)

// asyncView is a function page's Async section: the function's async
// configuration, its queued work and its dead letters.
type asyncView struct {
	Config domain.AsyncConfig
	// Queued are the newest few invocations waiting for delivery or being
	// delivered; QueuedCount counts them all ("20+" past asyncCounted).
	Queued      []queuedRow
	QueuedCount string
	// Dead is a page of the dead letters, newest first (Older: not the
	// first page); DeadCount counts the page ("20+" when there are more)
	// and DeadNext is the address of the next ("" on the last).
	Dead      []deadRow
	DeadCount string
	DeadNext  string
	Older     bool
}

// queuedRow is a line of the queued work.
type queuedRow struct {
	ID         uuid.UUID
	State      domain.AsyncState
	EnqueuedAt time.Time
	Attempts   int
}

// deadRow is a line of the dead letters: its last answer's status (0:
// none) and why it was given up, with the last attempt's error if any.
type deadRow struct {
	ID              uuid.UUID
	Method, Path    string
	EnqueuedAt      time.Time
	Attempts        int
	Status          int
	Reason, Attempt string
}

// asyncView reads the Async section of f's page; deadCursor is the query's
// dead (a page of older dead letters), "" for the newest.
func (c *Console) asyncView(r *http.Request, f domain.Function, deadCursor string) (asyncView, error) {
	ctx := r.Context()
	av := asyncView{Config: f.Config.AsyncPolicy()}
	q := store.AsyncQuery{Namespace: f.Namespace, Function: f.Name, Limit: asyncCounted}
	var waiting []store.AsyncInvocation
	more := false
	for _, state := range []domain.AsyncState{domain.AsyncQueued, domain.AsyncRunning} {
		q.State = state
		page, err := c.cfg.Store.ListAsync(ctx, q)
		if err != nil {
			return av, err
		}
		waiting = append(waiting, page.Invocations...)
		more = more || page.NextCursor != ""
	}
	av.QueuedCount = count(len(waiting), more)
	slices.SortFunc(waiting, func(a, b store.AsyncInvocation) int { return b.EnqueuedAt.Compare(a.EnqueuedAt) })
	for _, inv := range waiting[:min(len(waiting), queuedShown)] {
		av.Queued = append(av.Queued, queuedRow{ID: inv.ID, State: inv.State, EnqueuedAt: inv.EnqueuedAt, Attempts: inv.AttemptCount})
	}

	q.State, q.Cursor = domain.AsyncDead, deadCursor
	page, err := c.cfg.Store.ListAsync(ctx, q)
	if err != nil {
		return av, err
	}
	av.DeadCount, av.Older = count(len(page.Invocations), page.NextCursor != ""), deadCursor != ""
	for _, inv := range page.Invocations {
		av.Dead = append(av.Dead, newDeadRow(inv))
	}
	if page.NextCursor != "" {
		av.DeadNext = "?" + url.Values{"dead": {page.NextCursor}}.Encode() + "#async"
	}
	return av, nil
}

// newDeadRow is the line of dead letter inv.
func newDeadRow(inv store.AsyncInvocation) deadRow {
	row := deadRow{ID: inv.ID, Method: inv.Request.Method, Path: inv.Request.Path, EnqueuedAt: inv.EnqueuedAt,
		Attempts: inv.AttemptCount, Status: inv.Response.Status, Reason: inv.Error}
	if n := len(inv.Attempts); n > 0 {
		last := inv.Attempts[n-1]
		row.Status = last.Status
		if last.Error != inv.Error {
			row.Attempt = last.Error
		}
	}
	return row
}

// count is n, or "n+" when there are more.
func count(n int, more bool) string {
	if more {
		return strconv.Itoa(n) + "+"
	}
	return strconv.Itoa(n)
}

// retryDeadLetter serves POST /console/{ns}/functions/{fn}/dead-letters/{id}/retry
// (command.RetryDeadLetter): the dead letter is queued again.
func (c *Console) retryDeadLetter(w http.ResponseWriter, r *http.Request, s session) error {
	ns, name := r.PathValue("ns"), r.PathValue("fn")
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		return domain.Errorf(domain.ENOTFOUND, "there is no dead letter %.80q", r.PathValue("id"))
	}
	if err := c.cfg.Commands.RetryDeadLetter(r.Context(), metadata(s), refOf(ns, name), id); err != nil {
		return err
	}
	http.Redirect(w, r, "/console/"+ns+"/functions/"+name+"#async", http.StatusSeeOther)
	return nil
}

// deleteDeadLetters serves POST /console/{ns}/functions/{fn}/dead-letters/delete
// (command.DeleteDeadLetters): every dead letter of the function is deleted.
func (c *Console) deleteDeadLetters(w http.ResponseWriter, r *http.Request, s session) error {
	ns, name := r.PathValue("ns"), r.PathValue("fn")
	if _, err := c.cfg.Commands.DeleteDeadLetters(r.Context(), metadata(s), refOf(ns, name), nil); err != nil {
		return err
	}
	http.Redirect(w, r, "/console/"+ns+"/functions/"+name+"#async", http.StatusSeeOther)
	return nil
}
