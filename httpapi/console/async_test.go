package console

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// TestAsyncSectionActionsAreTheOwners renders a function page with a dead
// letter: its owner gets Retry and a confirmed Delete all, both with the
// session's CSRF token; an operator reading it gets neither.
func TestAsyncSectionActionsAreTheOwners(t *testing.T) {
	t.Parallel()
	id := uuid.MustParse("01a24d59-efc0-784d-8ca7-63375c03915b")
	inv := store.AsyncInvocation{ID: id, Request: store.AsyncRequest{Method: "POST", Path: "/"}, State: domain.AsyncDead,
		AttemptCount: 3, Error: "retries exhausted", EnqueuedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Attempts: []store.AsyncAttempt{{Attempt: 3, Status: 0, Error: "connection refused <b>"}}, Response: store.AsyncResponse{Status: 503}}
	page := func(own bool) string {
		v := functionView{Namespace: "sless-ns", Name: "flaky", Own: own, CSRF: "tok-123",
			Async: asyncView{Config: domain.DefaultAsyncConfig(), QueuedCount: "0", Dead: []deadRow{newDeadRow(inv)}, DeadCount: "1"}}
		c := &Console{log: slog.Default()}
		w := httptest.NewRecorder()
		s := session{Session: store.Session{Namespace: "sless-ns", CSRF: "tok-123"}}
		c.renderView(w, httptest.NewRequest("GET", "/console/sless-ns/functions/flaky", nil), http.StatusOK, "function",
			view{Session: &s, Page: v})
		if w.Code != http.StatusOK {
			t.Fatalf("render: %d %s", w.Code, w.Body)
		}
		return w.Body.String()
	}
	owner := page(true)
	for _, want := range []string{
		`<div data-live id="async-live">`,
		`action="/console/sless-ns/functions/flaky/dead-letters/` + id.String() + `/retry"`,
		`action="/console/sless-ns/functions/flaky/dead-letters/delete"`,
		`data-confirm="Delete every dead letter of flaky? They cannot be retried afterwards."`,
		`<td class="attempts">3</td>`,
		`no answer`, // the last attempt got none; the 503 was an earlier one's
		`connection refused &lt;b&gt;`,
		`<dd id="async-max-retries">2</dd>`,
	} {
		if !strings.Contains(owner, want) {
			t.Errorf("the owner's page lacks %s", want)
		}
	}
	// Sign out's form, Scaling's, Retry's and Delete all's.
	const csrf = `<input type="hidden" name="csrf" value="tok-123">`
	if n := strings.Count(owner, csrf); n != 4 {
		t.Errorf("the owner's page has %d forms with the CSRF token, want 4 (sign out, Scaling, Retry, Delete all)", n)
	}
	operator := page(false)
	for _, unwanted := range []string{"/retry", "dead-letters/delete", "data-confirm"} {
		if strings.Contains(operator, unwanted) {
			t.Errorf("an operator's page offers %s", unwanted)
		}
	}
}

// TestEventSummaryOfAsyncEvents says what the async events of the history mean.
func TestEventSummaryOfAsyncEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ev   domain.Event
		want string
	}{
		{domain.AsyncDeadLettered{InvocationID: "i1", Attempts: 3, Status: 500, Reason: "retries exhausted"},
			"async invocation i1 dead-lettered after 3 attempts, last status 500: retries exhausted"},
		{domain.AsyncDeadLettered{InvocationID: "i1", Attempts: 1, Reason: "event too old"},
			"async invocation i1 dead-lettered after 1 attempt, no answer: event too old"},
		{domain.DeadLetterRetried{InvocationID: "i2"}, "dead letter i2 queued again"},
		{domain.DeadLettersDeleted{All: true, Count: 4}, "all dead letters deleted (4)"},
		{domain.DeadLettersDeleted{InvocationIDs: []string{"a", "b"}, Count: 2}, "2 dead letters deleted: a, b"},
		{domain.JobDeleted{}, ""},
	} {
		data, err := json.Marshal(tc.ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := eventSummary(tc.ev.EventType(), data); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.ev.EventType(), got, tc.want)
		}
	}
	if got := eventSummary("no.such_event", []byte(`{}`)); got != "" {
		t.Errorf("an unknown event: %q", got)
	}
}
