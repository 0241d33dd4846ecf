package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/auth"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/codestore/ziptest"
)

// TestClient calls every method of the client against the real API, each
// subtest in a namespace of its own, and then (unless -run picks some
// subtests) checks that every route of the client's table was called.
func TestClient(t *testing.T) {
	t.Parallel()
	f := setup(t)
	t.Cleanup(func() {
		if run := flag.Lookup("test.run").Value.String(); run != "" && run != "^TestClient$" && run != "TestClient" {
			return
		}
		if missing := f.calls.uncalled(); len(missing) > 0 {
			t.Errorf("routes of the client no test called: %v", missing)
		}
	})

	t.Run("EnsureNamespace", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		c, sub := f.tenant(t)
		if c.Namespace() != auth.Namespace(sub) {
			t.Fatalf("namespace %q, want %q", c.Namespace(), auth.Namespace(sub))
		}
		first, err := c.EnsureNamespace(ctx)
		if err != nil {
			t.Fatal(err)
		}
		again, err := c.EnsureNamespace(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if *first != (client.EnsureResult{Namespace: c.Namespace(), Created: true}) || *again != (client.EnsureResult{Namespace: c.Namespace()}) {
			t.Fatalf("ensure twice: %+v, then %+v", first, again)
		}

		// Another tenant's namespace, set explicitly, is refused.
		other, err := client.New(f.url, mint(t, testSecret, sub), client.WithNamespace("sless-0000000000000000"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = other.EnsureNamespace(ctx)
		wantError(t, err, http.StatusForbidden, client.CodeForbidden, "")
	})

	t.Run("Functions", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		c, _ := f.tenant(t)
		created, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "hello", Runtime: "python3.11", EnvVars: map[string]string{"GREETING": "hi"}})
		if err != nil {
			t.Fatal(err)
		}
		if created.Namespace != c.Namespace() || created.Phase != domain.PhasePending || created.MemoryMB != 128 ||
			created.TimeoutSec != 30 || created.Entrypoint != "handler.handle" || created.EnvVars["GREETING"] != "hi" ||
			created.ActiveVersion != 0 || created.LastBuiltAt != nil || created.CreatedAt.IsZero() {
			t.Fatalf("created %+v", created)
		}

		_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "hello", Runtime: "python3.11"})
		wantError(t, err, http.StatusConflict, client.CodeConflict, "")
		if !client.IsConflict(err) || client.IsNotFound(err) {
			t.Fatalf("IsConflict/IsNotFound of %v", err)
		}
		_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "Not_A_Label", Runtime: "python3.11"})
		wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "name")
		if !client.IsInvalid(err) {
			t.Fatalf("IsInvalid(%v) is false", err)
		}
		_, err = c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "cobol", Runtime: "cobol85"})
		wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "runtime")

		got, err := c.GetFunction(ctx, "hello")
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != created.Name || !got.CreatedAt.Equal(created.CreatedAt) || got.EnvVars["GREETING"] != "hi" {
			t.Fatalf("got %+v, created %+v", got, created)
		}
		list, err := c.ListFunctions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Name != "hello" {
			t.Fatalf("listed %+v", list)
		}

		updated, err := c.UpdateFunction(ctx, "hello", client.UpdateFunctionRequest{MemoryMB: client.Ptr(256), EnvVars: client.Ptr(map[string]string{})})
		if err != nil {
			t.Fatal(err)
		}
		if updated.MemoryMB != 256 || len(updated.EnvVars) != 0 || updated.Runtime != "python3.11" || updated.TimeoutSec != 30 {
			t.Fatalf("updated %+v", updated)
		}
		_, err = c.UpdateFunction(ctx, "hello", client.UpdateFunctionRequest{MemoryMB: client.Ptr(-1)})
		wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "memory_mb")
		_, err = c.UpdateFunction(ctx, "absent", client.UpdateFunctionRequest{})
		wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

		if err := c.DeleteFunction(ctx, "hello"); err != nil {
			t.Fatal(err)
		}
		_, err = c.GetFunction(ctx, "hello")
		wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
		if !client.IsNotFound(err) {
			t.Fatalf("IsNotFound(%v) is false", err)
		}
		wantError(t, c.DeleteFunction(ctx, "hello"), http.StatusNotFound, client.CodeNotFound, "")
	})

	t.Run("UploadSourceVersionsRollback", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		c, _ := f.tenant(t)
		ns := c.Namespace()
		if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "app", Runtime: "python3.11"}); err != nil {
			t.Fatal(err)
		}
		_, err := c.Source(ctx, "app", 0)
		wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

		v1files := map[string]string{"handler.py": "def handle(event):\n    return 1\n", "blob.bin": "\x00\x01\xff"}
		up, err := c.Upload(ctx, "app", ziptest.Files(t, v1files))
		if err != nil {
			t.Fatal(err)
		}
		if !up.Queued || up.Version.Version != 1 || up.BuildStatus != domain.BuildStatusQueued || up.Digest == "" || up.Config.Runtime != "python3.11" {
			t.Fatalf("first upload %+v", up)
		}
		same, err := c.Upload(ctx, "app", ziptest.Files(t, v1files))
		if err != nil {
			t.Fatal(err)
		}
		if same.Queued || same.Version.Version != 1 || same.Digest != up.Digest {
			t.Fatalf("the same code again: %+v", same)
		}
		_, err = c.Upload(ctx, "app", []byte("not a zip"))
		wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "")
		_, err = c.Upload(ctx, "absent", ziptest.Files(t, v1files))
		wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

		src, err := c.Source(ctx, "app", 0)
		if err != nil {
			t.Fatal(err)
		}
		if src.Version != 1 || len(src.Files) != 2 {
			t.Fatalf("source %+v", src)
		}
		for _, file := range src.Files {
			content, err := file.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if string(content) != v1files[file.Name] || file.Binary != (file.Name == "blob.bin") {
				t.Fatalf("file %+v: content %q, want %q", file, content, v1files[file.Name])
			}
		}

		f.build(t, ns, "app", 1, "")
		v2files := map[string]string{"handler.py": "def handle(event):\n    return 2\n"}
		if up, err := c.Upload(ctx, "app", ziptest.Files(t, v2files)); err != nil || up.Version.Version != 2 || !up.Queued {
			t.Fatalf("second upload: %+v, %v", up, err)
		}
		f.build(t, ns, "app", 2, "")
		if up, err := c.Upload(ctx, "app", ziptest.Files(t, map[string]string{"handler.py": "def handle(event):\n    return 3\n"})); err != nil || up.Version.Version != 3 {
			t.Fatalf("third upload: %+v, %v", up, err)
		}

		vl, err := c.ListVersions(ctx, "app")
		if err != nil {
			t.Fatal(err)
		}
		if vl.Function != "app" || vl.ActiveVersion != 2 || len(vl.Versions) != 3 || vl.Versions[0].Version != 3 ||
			vl.Versions[1].BuildStatus != domain.BuildStatusSucceeded || !vl.Versions[1].Active || vl.Versions[1].Image != "image:v2" ||
			vl.Versions[0].BuildLog != nil || len(vl.Activations) != 2 || vl.Activations[0].Version != 2 {
			t.Fatalf("versions %+v", vl)
		}
		v1, err := c.GetVersion(ctx, "app", 1)
		if err != nil {
			t.Fatal(err)
		}
		if v1.Version != 1 || v1.Active || v1.BuiltAt == nil || v1.BuildLog == nil || *v1.BuildLog != "build log of version 1" {
			t.Fatalf("version 1: %+v", v1)
		}
		_, err = c.GetVersion(ctx, "app", 9)
		wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

		old, err := c.Source(ctx, "app", 1)
		if err != nil {
			t.Fatal(err)
		}
		active, err := c.Source(ctx, "app", 0)
		if err != nil {
			t.Fatal(err)
		}
		if old.Version != 1 || len(old.Files) != 2 || active.Version != 2 || len(active.Files) != 1 || active.Files[0].Content != v2files["handler.py"] {
			t.Fatalf("source of version 1 %+v, of the active one %+v", old, active)
		}

		rb, err := c.Rollback(ctx, "app", 1)
		if err != nil {
			t.Fatal(err)
		}
		if rb.ActiveVersion != 1 || rb.BuildRequeued || rb.Name != "app" {
			t.Fatalf("rollback %+v", rb)
		}
		_, err = c.Rollback(ctx, "app", 3)
		wantError(t, err, http.StatusUnprocessableEntity, client.CodeUnprocessable, "")
		if !client.IsUnprocessable(err) {
			t.Fatalf("IsUnprocessable(%v) is false", err)
		}
		_, err = c.Rollback(ctx, "app", 0)
		wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "version")
		_, err = c.Rollback(ctx, "app", 42)
		wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
	})

	t.Run("Triggers", func(t *testing.T) {
		t.Parallel()
		ctx := context.Background()
		c, _ := f.tenant(t)
		if _, err := c.CreateFunction(ctx, client.CreateFunctionRequest{Name: "web", Runtime: "nodejs20"}); err != nil {
			t.Fatal(err)
		}
		web, err := c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "web-http", Type: domain.TriggerHTTP, Function: "web"})
		if err != nil {
			t.Fatal(err)
		}
		if !web.Enabled || web.Type != domain.TriggerHTTP || web.URL != externalURL+"/fn/"+c.Namespace()+"/web" || web.Namespace != c.Namespace() {
			t.Fatalf("http trigger %+v", web)
		}
		tick, err := c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "tick", Type: domain.TriggerCron, Function: "web",
			Schedule: "*/5 * * * *", Enabled: client.Ptr(false)})
		if err != nil {
			t.Fatal(err)
		}
		if tick.Enabled || tick.Schedule != "*/5 * * * *" || tick.NextRunAt != nil || tick.URL != "" {
			t.Fatalf("disabled cron trigger %+v", tick)
		}

		_, err = c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "tick", Type: domain.TriggerCron, Function: "web", Schedule: "* * * * *"})
		wantError(t, err, http.StatusConflict, client.CodeConflict, "")
		_, err = c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "orphan", Type: domain.TriggerHTTP, Function: "absent"})
		wantError(t, err, http.StatusUnprocessableEntity, client.CodeUnprocessable, "function")
		_, err = c.CreateTrigger(ctx, client.CreateTriggerRequest{Name: "bad", Type: domain.TriggerHTTP, Function: "web", Schedule: "* * * * *"})
		wantError(t, err, http.StatusBadRequest, client.CodeInvalid, "schedule")

		got, err := c.GetTrigger(ctx, "web-http")
		if err != nil {
			t.Fatal(err)
		}
		if got.Name != "web-http" || got.URL != web.URL || !got.CreatedAt.Equal(web.CreatedAt) {
			t.Fatalf("got %+v, created %+v", got, web)
		}
		for function, want := range map[string]int{"": 2, "web": 2, "other": 0} {
			ts, err := c.ListTriggers(ctx, function)
			if err != nil {
				t.Fatal(err)
			}
			if len(ts) != want {
				t.Fatalf("triggers of %q: %+v, want %d", function, ts, want)
			}
		}

		on, err := c.SetTriggerEnabled(ctx, "tick", true)
		if err != nil {
			t.Fatal(err)
		}
		if !on.Enabled || on.NextRunAt == nil || !on.NextRunAt.After(time.Now()) {
			t.Fatalf("enabled cron trigger %+v", on)
		}
		_, err = c.SetTriggerEnabled(ctx, "absent", true)
		wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")

		if err := c.DeleteTrigger(ctx, "tick"); err != nil {
			t.Fatal(err)
		}
		_, err = c.GetTrigger(ctx, "tick")
		wantError(t, err, http.StatusNotFound, client.CodeNotFound, "")
		wantError(t, c.DeleteTrigger(ctx, "tick"), http.StatusNotFound, client.CodeNotFound, "")
	})

	t.Run("Jobs", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("Invocations", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("Events", func(t *testing.T) {
		t.Parallel()
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
	})

	t.Run("Unauthorized", func(t *testing.T) {
		t.Parallel()
		c, err := client.New(f.url, mint(t, []byte("another-secret-0123456789abcdefghij"), "mallory"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.ListFunctions(context.Background())
		wantError(t, err, http.StatusUnauthorized, client.CodeUnauthorized, "")
		if client.IsNotFound(err) || client.IsConflict(err) {
			t.Fatalf("a 401 is classified as another error: %v", err)
		}
	})
}

func jsonEqual(got json.RawMessage, want string) bool {
	var a, b any
	return json.Unmarshal(got, &a) == nil && json.Unmarshal([]byte(want), &b) == nil && fmt.Sprint(a) == fmt.Sprint(b)
}

func TestNamespaceOf(t *testing.T) {
	t.Parallel()
	// The example of SPEC §1.
	ns, err := client.NamespaceOf(mint(t, testSecret, "019cc268-6c6a-781e-8613-4bed4ec7cd20"))
	if err != nil || ns != "sless-ffd1f598c169b0ae" {
		t.Fatalf("NamespaceOf = %q, %v; want sless-ffd1f598c169b0ae", ns, err)
	}
	for _, bad := range []string{"", "opaque-api-key", "a.b.c", "e30.e30.sig" /* {} has no sub */} {
		if ns, err := client.NamespaceOf(bad); err == nil {
			t.Errorf("NamespaceOf(%q) = %q, want an error", bad, ns)
		}
	}

	if _, err := client.New("http://localhost:8080", "opaque-api-key"); err == nil {
		t.Error("New derived a namespace from a token that is not a JWT")
	}
	c, err := client.New("http://localhost:8080/", "opaque-api-key", client.WithNamespace("sless-0123456789abcdef"))
	if err != nil || c.Namespace() != "sless-0123456789abcdef" {
		t.Fatalf("New with WithNamespace: %v", err)
	}
	for _, base := range []string{"localhost:8080", "/v1", "ftp://example.com", ""} {
		if _, err := client.New(base, "", client.WithNamespace("sless-0123456789abcdef")); err == nil {
			t.Errorf("New accepted the base URL %q", base)
		}
	}
}

// TestErrorOfNonAPIAnswers puts a stand-in for a proxy or load balancer
// where the API should be: its HTML errors become *Error values with the
// status and no code, which no Is helper mistakes for the API's.
func TestErrorOfNonAPIAnswers(t *testing.T) {
	t.Parallel()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		switch {
		case strings.HasSuffix(r.URL.Path, "/gone"):
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "<html><body><h1>404 Not Found</h1><hr>nginx</body></html>")
		case strings.HasSuffix(r.URL.Path, "/functions"):
			fmt.Fprint(w, "<html><body>Welcome to nginx!</body></html>") // 200, not the API
		default:
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprint(w, "<html>\n<body>\n<h1>502 Bad Gateway</h1>\n</body>\n</html>")
		}
	}))
	t.Cleanup(proxy.Close)
	c, err := client.New(proxy.URL, mint(t, testSecret, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	_, err = c.GetFunction(ctx, "hello")
	var e *client.Error
	if !errors.As(err, &e) || e.Status != http.StatusBadGateway || e.Code != "" {
		t.Fatalf("502 page: %#v", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "502 Bad Gateway (not an API error)") || !strings.Contains(msg, "text/html") {
		t.Fatalf("502 page: %q", msg)
	}

	_, err = c.GetFunction(ctx, "gone")
	if !errors.As(err, &e) || e.Status != http.StatusNotFound || client.IsNotFound(err) {
		t.Fatalf("a proxy's 404 page: %v (IsNotFound %t)", err, client.IsNotFound(err))
	}

	_, err = c.ListFunctions(ctx)
	if err == nil || !strings.Contains(err.Error(), "not JSON") || errors.As(err, &e) {
		t.Fatalf("a 200 HTML page: %v", err)
	}
}
