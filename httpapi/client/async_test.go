package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/command"
	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/store"
)

// testAsync: InvokeAsync queues (202, then 200 with the same id under its
// Idempotency-Key), GetAsyncInvocation and ListQueued show it; a dead
// letter (recorded here as the async worker would: nothing delivers in
// this fixture) is listed, retried, and deleted one by one or all at once.
func testAsync(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, _ := f.tenant(t)
	ns := c.Namespace()
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "later", Runtime: "python3.11",
		Async: &client.AsyncPatch{MaxRetries: client.Ptr(0)}}); err != nil {
		t.Fatal(err)
	}
	fn, err := c.GetFunction(ctx, "later")
	if err != nil || fn.Async != (client.AsyncConfig{MaxRetries: 0, MaxEventAgeSec: domain.DefaultAsyncMaxEventAgeSec}) {
		t.Fatalf("async config: %+v, %v", fn, err)
	}
	first, err := c.InvokeAsync(ctx, "later", []byte(`{"n": 1}`), client.AsyncOptions{IdempotencyKey: "k"})
	if err != nil || !first.Created || first.State != "queued" {
		t.Fatalf("InvokeAsync: %+v, %v", first, err)
	}
	again, err := c.InvokeAsync(ctx, "later", []byte(`{"n": 1}`), client.AsyncOptions{IdempotencyKey: "k"})
	if err != nil || again.Created || again.InvocationID != first.InvocationID {
		t.Fatalf("InvokeAsync under the same key: %+v, %v; want %s, not created", again, err, first.InvocationID)
	}
	if _, err := c.InvokeAsync(ctx, "later", nil, client.AsyncOptions{CallbackURL: "https://hooks.example/x"}); !client.IsInvalid(err) {
		t.Fatalf("a callback with callbacks off: %v, want INVALID", err)
	}
	inv, err := c.GetAsyncInvocation(ctx, "later", first.InvocationID)
	if err != nil || inv.State != "queued" || inv.Request.Method != "POST" || inv.Request.BodyBytes != 8 || inv.IdempotencyKey != "k" {
		t.Fatalf("GetAsyncInvocation: %+v, %v", inv, err)
	}
	queued, err := c.ListQueued(ctx, "later", 0, "")
	if err != nil || len(queued.Invocations) != 1 || queued.Invocations[0].InvocationID != first.InvocationID {
		t.Fatalf("ListQueued: %+v, %v", queued, err)
	}

	// Three dead letters, as the worker records them.
	ids := []string{first.InvocationID}
	for range 2 {
		acc, err := c.InvokeAsync(ctx, "later", []byte(`{}`), client.AsyncOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, acc.InvocationID)
	}
	for _, id := range ids {
		f.deadLetter(t, ns, "later", id)
	}
	page, err := c.ListDeadLetters(ctx, "later", 2, "")
	if err != nil || len(page.Invocations) != 2 || page.NextCursor == "" || page.Invocations[0].InvocationID != ids[2] {
		t.Fatalf("ListDeadLetters page 1: %+v, %v", page, err)
	}
	page, err = c.ListDeadLetters(ctx, "later", 2, page.NextCursor)
	if err != nil || len(page.Invocations) != 1 || page.NextCursor != "" || page.Invocations[0].InvocationID != ids[0] ||
		page.Invocations[0].State != "dead_lettered" || page.Invocations[0].Error != "retries exhausted" || page.Invocations[0].Response.Status != 503 {
		t.Fatalf("ListDeadLetters page 2: %+v, %v", page, err)
	}
	retried, err := c.RetryDeadLetter(ctx, "later", ids[0])
	if err != nil || retried.State != "queued" || retried.InvocationID != ids[0] || len(retried.Attempts) != 1 {
		t.Fatalf("RetryDeadLetter: %+v, %v", retried, err)
	}
	if _, err := c.RetryDeadLetter(ctx, "later", ids[0]); !client.IsNotFound(err) {
		t.Fatalf("retry of a queued invocation: %v, want NOT_FOUND", err)
	}
	if err := c.DeleteDeadLetter(ctx, "later", ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteDeadLetter(ctx, "later", ids[1]); !client.IsNotFound(err) {
		t.Fatalf("a second delete: %v, want NOT_FOUND", err)
	}
	if n, err := c.DeleteDeadLetters(ctx, "later"); err != nil || n != 1 {
		t.Fatalf("DeleteDeadLetters: %d, %v; want 1", n, err)
	}
	if _, err := c.GetAsyncInvocation(ctx, "later", ids[2]); !client.IsNotFound(err) {
		t.Fatalf("a deleted dead letter: %v, want NOT_FOUND", err)
	}
}

// deadLetter records one failed attempt of invocation id and makes it a
// dead letter, as the async worker does after its last retry.
func (f *fixture) deadLetter(t *testing.T, ns, fn, id string) {
	t.Helper()
	ctx := context.Background()
	inv, err := f.store.GetAsync(ctx, ns, fn, uuid.MustParse(id))
	if err != nil {
		t.Fatal(err)
	}
	inv.AttemptCount = 1
	cmds := command.New(command.Config{Store: f.store})
	now := time.Now()
	last := store.AsyncAttempt{Attempt: 1, StartedAt: now, EndedAt: now, Status: 503, Error: "function unavailable"}
	if _, err := f.store.Execute(ctx, store.Metadata{Actor: "test"}, func(tx *store.Tx) error {
		return cmds.DeadLetterTx(ctx, tx, inv, &last, &store.AsyncResponse{Status: 503, Body: []byte("down")}, "retries exhausted")
	}); err != nil {
		t.Fatal(err)
	}
}
