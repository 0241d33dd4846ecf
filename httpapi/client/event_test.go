package client_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// testEvents: the audit log records the caller, pages by position and
// filters by stream.
func testEvents(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, sub := f.tenant(t)
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "ev", Runtime: "go1.23"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateFunction(ctx, "ev", client.UpdateFunctionRequest{TimeoutSec: client.Ptr(60)}); err != nil {
		t.Fatal(err)
	}

	all, err := c.ListEvents(ctx, client.EventQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range all.Events {
		types = append(types, e.Type)
		if e.Actor != sub || e.RequestID == "" || e.Position == 0 || e.RecordedAt.IsZero() {
			t.Fatalf("event %+v", e)
		}
	}
	if !slices.Contains(types, domain.EventFunctionCreated) || all.NextAfter != all.Events[len(all.Events)-1].Position {
		t.Fatalf("events %v, next after %d", types, all.NextAfter)
	}

	first, err := c.ListEvents(ctx, client.EventQuery{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.ListEvents(ctx, client.EventQuery{Limit: 1, After: first.NextAfter})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Events) != 1 || len(second.Events) != 1 || first.Events[0].Position != all.Events[0].Position ||
		second.Events[0].Position != all.Events[1].Position {
		t.Fatalf("pages of one: %+v, %+v; all %+v", first, second, all)
	}

	fn, err := c.ListEvents(ctx, client.EventQuery{Stream: "function/ev"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fn.Events) < 2 {
		t.Fatalf("events of function/ev: %+v", fn)
	}
	for _, e := range fn.Events {
		if e.Stream != "function:"+c.Namespace()+"/ev" {
			t.Fatalf("event of another stream: %+v", e)
		}
	}

	_, err = c.ListEvents(ctx, client.EventQuery{Limit: 5000})
	wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "limit")
}
