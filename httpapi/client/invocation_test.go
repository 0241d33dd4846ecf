package client_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/store"
)

// testInvocations: the invocation log in pages, filtered by status and time,
// and one invocation with its log.
func testInvocations(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, _ := f.tenant(t)
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "inv", Runtime: "python3.11"}); err != nil {
		t.Fatal(err)
	}
	// The proxy and the workers record invocations through this writer.
	w := f.store.NewInvocationWriter(store.InvocationWriterOptions{})
	base := time.Now().UTC().Add(-time.Hour).Truncate(time.Microsecond)
	statuses := []int{200, 500, 504, 404, 200}
	for i, status := range statuses {
		w.Record(store.Invocation{Namespace: c.Namespace(), Function: "inv", Version: 1, Trigger: store.InvocationHTTP,
			Method: "POST", Path: fmt.Sprintf("/%d", i), Status: status, Duration: 1500 * time.Microsecond,
			Log: fmt.Sprintf("log of %d", i), StartedAt: base.Add(time.Duration(i) * time.Minute)})
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}

	var all []client.Invocation
	q := client.InvocationQuery{Limit: 2}
	for pages := 1; ; pages++ {
		page, err := c.ListInvocations(ctx, "inv", q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Invocations) > 2 || pages > 3 {
			t.Fatalf("page %d: %+v", pages, page)
		}
		all = append(all, page.Invocations...)
		if page.NextCursor == "" {
			break
		}
		q.Cursor = page.NextCursor
	}
	if len(all) != 5 || all[0].Path != "/4" || all[4].Path != "/0" || all[0].DurationMS != 1.5 || all[0].Trigger != "http" {
		t.Fatalf("every invocation, newest first: %+v", all)
	}

	errs, err := c.ListInvocations(ctx, "inv", client.InvocationQuery{Status: "5xx", Since: base.Add(time.Minute), Until: base.Add(2 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(errs.Invocations) != 1 || errs.Invocations[0].Status != 500 || errs.NextCursor != "" {
		t.Fatalf("5xx in minute 1: %+v", errs)
	}
	one, err := c.GetInvocation(ctx, "inv", errs.Invocations[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if one.ID != errs.Invocations[0].ID || one.Log != "log of 1" || one.Method != "POST" {
		t.Fatalf("invocation %+v", one)
	}

	_, err = c.ListInvocations(ctx, "inv", client.InvocationQuery{Status: "teapot"})
	wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "status")
	_, err = c.ListInvocations(ctx, "absent", client.InvocationQuery{})
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
	_, err = c.GetInvocation(ctx, "inv", uuid.NewString())
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
}
