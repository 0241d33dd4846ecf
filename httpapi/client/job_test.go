package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/client"
)

// testJobs: a job created without a run, read back after a 409, run by
// raising run_id, and deleted.
func testJobs(t *testing.T, f *fixture) {
	ctx := context.Background()
	c, _ := f.tenant(t)
	if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "runner", Runtime: "python3.11"}); err != nil {
		t.Fatal(err)
	}
	job, err := c.CreateJob(ctx, client.CreateJobRequest{Name: "once", Function: "runner", Event: json.RawMessage(`{"x": 1}`)})
	if err != nil {
		t.Fatal(err)
	}
	if job.RunID != 0 || job.Function != "runner" || job.Namespace != c.Namespace() || job.StartedAt != nil || !jsonEqual(job.Event, `{"x":1}`) {
		t.Fatalf("created %+v", job)
	}
	_, err = c.CreateJob(ctx, client.CreateJobRequest{Name: "once", Function: "runner"})
	wantError(t, err, http.StatusConflict, client.CodeConflict, "")
	existing, err := c.GetJob(ctx, "once") // as the Terraform provider reads back a 409
	if err != nil {
		t.Fatal(err)
	}
	if existing.Name != "once" || !existing.CreatedAt.Equal(job.CreatedAt) || !jsonEqual(existing.Event, `{"x":1}`) {
		t.Fatalf("read back %+v, created %+v", existing, job)
	}
	_, err = c.CreateJob(ctx, client.CreateJobRequest{Name: "orphan", Function: "absent"})
	wantError(t, err, http.StatusUnprocessableEntity, client.CodeUnprocessable, "function")

	for function, want := range map[string]int{"": 1, "runner": 1, "other": 0} {
		js, err := c.ListJobs(ctx, function)
		if err != nil {
			t.Fatal(err)
		}
		if len(js) != want {
			t.Fatalf("jobs of %q: %+v, want %d", function, js, want)
		}
	}

	run, err := c.SetJobRunID(ctx, "once", 1)
	if err != nil {
		t.Fatal(err)
	}
	if run.RunID != 1 || run.Phase != domain.JobPhasePending {
		t.Fatalf("run 1: %+v", run)
	}
	if again, err := c.SetJobRunID(ctx, "once", 1); err != nil || again.RunID != 1 {
		t.Fatalf("run 1 again: %+v, %v", again, err)
	}
	_, err = c.SetJobRunID(ctx, "once", 0)
	e := wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "run_id")
	if !strings.Contains(e.Error(), "400 INVALID") {
		t.Fatalf("error text %q", e.Error())
	}

	if err := c.DeleteJob(ctx, "once"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetJob(ctx, "once")
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
	_, err = c.SetJobRunID(ctx, "once", 2)
	wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
	wantError(t, c.DeleteJob(ctx, "once"), http.StatusNotFound, client.CodeNotFound, "")
}

// jsonEqual reports whether got and want hold the same JSON value.
func jsonEqual(got json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && fmt.Sprint(a) == fmt.Sprint(b)
}
