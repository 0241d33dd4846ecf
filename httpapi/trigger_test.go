package httpapi_test

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
)

func TestTriggers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("web")
	c.createFunction("cronfn")

	web := c.do("POST", c.p("/triggers"), map[string]any{"name": "web-http", "type": "http", "function": "web"}).want(201).obj()
	wantURL := externalURL + "/fn/" + c.ns + "/web"
	if web["url"] != wantURL || web["enabled"] != true || web["active"] != false || web["type"] != "http" {
		t.Fatalf("http trigger %v, want url %s, enabled by default", web, wantURL)
	}
	if n := f.countJobs("rollout", c.ns, "function", "web"); n != 1 {
		t.Fatalf("%d rollout jobs for the http trigger, want 1", n)
	}

	f.clock.Freeze(time.Date(2026, 5, 1, 12, 2, 30, 0, time.UTC))
	tick := c.do("POST", c.p("/triggers"), map[string]any{"name": "tick", "type": "cron", "function": "cronfn",
		"schedule": "*/5 * * * *", "enabled": false}).want(201).obj()
	if tick["enabled"] != false || tick["url"] != nil || tick["schedule"] != "*/5 * * * *" || tick["next_run_at"] != nil {
		t.Fatalf("disabled cron trigger %v", tick)
	}
	if n := f.countJobs("schedule", c.ns, "trigger", "tick"); n != 1 {
		t.Fatalf("%d schedule jobs, want 1", n)
	}

	// 409 on a duplicate name; the existing trigger stays readable.
	c.do("POST", c.p("/triggers"), map[string]any{"name": "tick", "type": "http", "function": "web"}).wantError(409, "CONFLICT", "", "tick")
	if got := c.do("GET", c.p("/triggers/tick"), nil).want(200).obj(); got["type"] != "cron" {
		t.Fatalf("after the conflict: %v", got)
	}
	// 422 when the function does not exist.
	c.do("POST", c.p("/triggers"), map[string]any{"name": "orphan", "type": "http", "function": "ghost"}).
		wantError(422, "UNPROCESSABLE", "function", "ghost")
	c.do("GET", c.p("/triggers/orphan"), nil).wantError(404, "NOT_FOUND", "")
	c.do("POST", c.p("/triggers"), map[string]any{"name": "sched", "type": "http", "function": "web", "schedule": "* * * * *"}).
		wantError(400, "INVALID", "schedule", "")

	// PATCH enabled.
	on := c.do("PATCH", c.p("/triggers/tick"), map[string]any{"enabled": true}).want(200).obj()
	if on["enabled"] != true || on["next_run_at"] != "2026-05-01T12:05:00Z" {
		t.Fatalf("enabled cron trigger %v", on)
	}
	if n := f.countJobs("schedule", c.ns, "trigger", "tick"); n < 1 {
		t.Fatal("no schedule job after enabling")
	}
	off := c.do("PATCH", c.p("/triggers/web-http"), map[string]any{"enabled": false}).want(200).obj()
	if off["enabled"] != false {
		t.Fatalf("disabled http trigger %v", off)
	}
	c.do("PATCH", c.p("/triggers/web-http"), map[string]any{}).wantError(400, "INVALID", "enabled", "required")
	c.do("PATCH", c.p("/triggers/ghost"), map[string]any{"enabled": true}).wantError(404, "NOT_FOUND", "")

	var list struct {
		Triggers []map[string]any `json:"triggers"`
	}
	c.do("GET", c.p("/triggers"), nil).want(200).decode(&list)
	if len(list.Triggers) != 2 || list.Triggers[0]["name"] != "tick" || list.Triggers[1]["name"] != "web-http" {
		t.Fatalf("triggers %v", list.Triggers)
	}
	c.do("GET", c.p("/triggers?function=web"), nil).want(200).decode(&list)
	if len(list.Triggers) != 1 || list.Triggers[0]["name"] != "web-http" {
		t.Fatalf("triggers of web %v", list.Triggers)
	}

	c.do("DELETE", c.p("/triggers/web-http"), nil).want(204)
	c.do("GET", c.p("/triggers/web-http"), nil).wantError(404, "NOT_FOUND", "")
	c.do("DELETE", c.p("/triggers/web-http"), nil).wantError(404, "NOT_FOUND", "")
	if n := f.countJobs("rollout", c.ns, "function", "web"); n < 1 {
		t.Fatal("no rollout job after deleting the http trigger")
	}
}

func TestJobs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("worker")

	j := c.do("POST", c.p("/jobs"), map[string]any{"name": "report", "function": "worker", "event": map[string]any{"day": "monday"}}).want(201).obj()
	if j["phase"] != "Pending" || j["run_id"] != 0.0 || j["event"].(map[string]any)["day"] != "monday" || j["started_at"] != nil {
		t.Fatalf("job %v", j)
	}
	if n := f.countJobs("run_job", c.ns, "job", "report"); n != 0 {
		t.Fatalf("run_id 0 queued %d runs", n)
	}
	// 409 on a duplicate; the job reads back with GET (Terraform does this).
	c.do("POST", c.p("/jobs"), map[string]any{"name": "report", "function": "worker", "run_id": 5}).wantError(409, "CONFLICT", "", "report")
	if got := c.do("GET", c.p("/jobs/report"), nil).want(200).obj(); got["run_id"] != 0.0 {
		t.Fatalf("after the conflict: %v", got)
	}
	c.do("POST", c.p("/jobs"), map[string]any{"name": "lost", "function": "ghost"}).wantError(422, "UNPROCESSABLE", "function", "ghost")

	// Raising run_id runs it: 202 and one run job.
	if got := c.do("PATCH", c.p("/jobs/report"), map[string]any{"run_id": 1}).want(202).obj(); got["run_id"] != 1.0 || got["phase"] != "Pending" {
		t.Fatalf("after run_id 1: %v", got)
	}
	if n := f.countJobs("run_job", c.ns, "job", "report", "run_id", "1"); n != 1 {
		t.Fatalf("%d runs of run 1, want 1", n)
	}
	c.do("PATCH", c.p("/jobs/report"), map[string]any{"run_id": 1}).want(200)
	c.do("PATCH", c.p("/jobs/report"), map[string]any{"run_id": 0}).wantError(400, "INVALID", "run_id", "grow")
	c.do("PATCH", c.p("/jobs/report"), map[string]any{}).wantError(400, "INVALID", "run_id", "required")
	c.do("PATCH", c.p("/jobs/ghost"), map[string]any{"run_id": 3}).wantError(404, "NOT_FOUND", "")
	if n := f.countJobs("run_job", c.ns, "job", "report"); n != 1 {
		t.Fatalf("%d runs, want 1", n)
	}

	// Created with run_id > 0: runs at once.
	c.do("POST", c.p("/jobs"), map[string]any{"name": "now", "function": "worker", "run_id": 1}).want(201)
	if n := f.countJobs("run_job", c.ns, "job", "now", "run_id", "1"); n != 1 {
		t.Fatalf("%d runs of the job created with run_id 1", n)
	}
	var list struct {
		Jobs []map[string]any `json:"jobs"`
	}
	c.do("GET", c.p("/jobs?function=worker"), nil).want(200).decode(&list)
	if len(list.Jobs) != 2 || list.Jobs[0]["name"] != "now" {
		t.Fatalf("jobs %v", list.Jobs)
	}

	// A deleted job's run not yet taken by a worker is cancelled with it (a
	// running one: workers.TestCancelRunTx); so are those of the jobs a
	// deleted function takes with it.
	c.do("DELETE", c.p("/jobs/now"), nil).want(204)
	if state := f.runState(c.ns, "now"); state != "cancelled" {
		t.Fatalf("the run of the deleted job is %q, want cancelled", state)
	}
	c.do("GET", c.p("/jobs/now"), nil).wantError(404, "NOT_FOUND", "")
	c.do("DELETE", c.p("/jobs/now"), nil).wantError(404, "NOT_FOUND", "")

	c.do("DELETE", c.p("/functions/worker"), nil).want(204)
	if state := f.runState(c.ns, "report"); state != "cancelled" {
		t.Fatalf("the run of a job of the deleted function is %q, want cancelled", state)
	}
	c.do("GET", c.p("/jobs/report"), nil).wantError(404, "NOT_FOUND", "")
	c.do("PATCH", c.p("/jobs/report"), map[string]any{"run_id": 2}).wantError(404, "NOT_FOUND", "")
}

func TestEventsAuditLog(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.do("POST", c.p("/ensure"), nil).want(201)
	c.createFunction("a")
	c.createFunction("b")
	c.do("PUT", c.p("/functions/a"), map[string]any{"memory_mb": 256}).want(200)

	type page struct {
		Events []struct {
			Position int64          `json:"position"`
			Stream   string         `json:"stream"`
			Type     string         `json:"type"`
			Data     map[string]any `json:"data"`
			Actor    string         `json:"actor"`
		} `json:"events"`
		NextAfter int64 `json:"next_after"`
	}
	var all page
	c.do("GET", c.p("/events"), nil).want(200).decode(&all)
	types := []string{}
	for _, e := range all.Events {
		types = append(types, e.Type)
		if e.Actor != c.sub {
			t.Fatalf("event %+v has actor %q, want %q", e, e.Actor, c.sub)
		}
	}
	want := []string{"namespace.ensured", "function.created", "function.created", "function.config_updated"}
	if len(types) != len(want) {
		t.Fatalf("types %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("types %v, want %v", types, want)
		}
	}

	// Paging.
	var p1, p2 page
	c.do("GET", c.p("/events?limit=3"), nil).want(200).decode(&p1)
	c.do("GET", c.p("/events?limit=3&after="+strconv.FormatInt(p1.NextAfter, 10)), nil).want(200).decode(&p2)
	if len(p1.Events) != 3 || len(p2.Events) != 1 || p2.Events[0].Position != all.Events[3].Position {
		t.Fatalf("pages %+v / %+v", p1, p2)
	}
	// One stream, in either spelling.
	var fa, fa2 page
	c.do("GET", c.p("/events?stream=function/a"), nil).want(200).decode(&fa)
	c.do("GET", c.p("/events?stream=function:"+c.ns+"/a"), nil).want(200).decode(&fa2)
	if len(fa.Events) != 2 || len(fa2.Events) != 2 || fa.Events[1].Data["config"].(map[string]any)["memory_mb"] != 256.0 {
		t.Fatalf("stream function/a: %+v", fa)
	}
	// Another namespace's stream id matches nothing here.
	other := f.tenant()
	other.createFunction("a")
	var none page
	c.do("GET", c.p("/events?stream=function:"+other.ns+"/a"), nil).want(200).decode(&none)
	if len(none.Events) != 0 {
		t.Fatalf("read another namespace's events: %+v", none)
	}
}

// TestTriggerCreateRacingFunctionDelete: a trigger created while its function
// is deleted is either deleted with it or refused; none survives orphaned.
func TestTriggerCreateRacingFunctionDelete(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	for i := 0; i < 15; i++ {
		name := fmt.Sprintf("racer-%d", i)
		c.createFunction(name)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			c.do("POST", c.p("/triggers"), map[string]any{"name": name + "-web", "type": "http", "function": name})
		}()
		go func() {
			defer wg.Done()
			c.do("DELETE", c.p("/functions/"+name), nil)
		}()
		wg.Wait()
		if res := c.do("GET", c.p("/triggers/"+name+"-web"), nil); res.status != http.StatusNotFound {
			t.Fatalf("round %d: trigger %s-web outlived its function (GET = %d %s)", i, name, res.status, res.body)
		}
	}
}

// TestEveryTriggerTypeIsServed walks domain.TriggerTypes through the API: each
// type is created, shows its own field (an http trigger its URL, a cron
// trigger its next run) and queues its job. A new type fails here until its
// request, its rendering (trigger.go newTrigger) and its job are added.
func TestEveryTriggerTypeIsServed(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("fn")
	cases := map[domain.TriggerType]struct {
		request map[string]any
		field   string // set in the answer for an enabled trigger of the type
		job     string // the River job kind its creation queues
		jobArg  string
		jobName string
	}{
		domain.TriggerHTTP: {map[string]any{}, "url", "rollout", "function", "fn"},
		domain.TriggerCron: {map[string]any{"schedule": "*/5 * * * *"}, "next_run_at", "schedule", "trigger", "t-cron"},
	}
	for _, typ := range domain.TriggerTypes() {
		tc, ok := cases[typ]
		if !ok {
			t.Errorf("trigger type %q has no case here: add its request, rendering and job", typ)
			continue
		}
		req := map[string]any{"name": "t-" + string(typ), "type": string(typ), "function": "fn"}
		for k, v := range tc.request {
			req[k] = v
		}
		got := c.do("POST", c.p("/triggers"), req).want(201).obj()
		if got["type"] != string(typ) || got[tc.field] == nil || got[tc.field] == "" {
			t.Errorf("%s trigger %v, want its %s", typ, got, tc.field)
		}
		if n := f.countJobs(tc.job, c.ns, tc.jobArg, tc.jobName); n < 1 {
			t.Errorf("%s trigger: no %s job", typ, tc.job)
		}
	}
}
