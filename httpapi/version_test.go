package httpapi_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
)

type versionsAnswer struct {
	Function      string `json:"function"`
	ActiveVersion int    `json:"active_version"`
	Versions      []struct {
		Version     int            `json:"version"`
		BuildStatus string         `json:"build_status"`
		Image       string         `json:"image"`
		Message     string         `json:"message"`
		Active      bool           `json:"active"`
		Config      map[string]any `json:"config"`
		CreatedAt   string         `json:"created_at"`
		BuiltAt     *string        `json:"built_at"`
		BuildLog    *string        `json:"build_log"`
	} `json:"versions"`
	Activations []struct {
		Version     int    `json:"version"`
		FromVersion int    `json:"from_version"`
		Reason      string `json:"reason"`
		Actor       string `json:"actor"`
		ActivatedAt string `json:"activated_at"`
	} `json:"activations"`
}

func TestVersionsBuildsAndRollback(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("fn")
	c.upload("fn", handlerZip(t, "1")).want(202)
	f.build(c.ns, "fn", 1, "")
	c.upload("fn", handlerZip(t, "2")).want(202)
	f.build(c.ns, "fn", 2, "")
	c.upload("fn", handlerZip(t, "3")).want(202)
	f.build(c.ns, "fn", 3, "SyntaxError: <bad> line 1")

	var vs versionsAnswer
	c.do("GET", c.p("/functions/fn/versions"), nil).want(200).decode(&vs)
	if vs.Function != "fn" || vs.ActiveVersion != 2 || len(vs.Versions) != 3 {
		t.Fatalf("versions %+v", vs)
	}
	v3, v2 := vs.Versions[0], vs.Versions[1]
	if v3.Version != 3 || v3.BuildStatus != "Failed" || v3.Message == "" || v3.Active || v3.BuiltAt == nil {
		t.Fatalf("version 3 %+v", v3)
	}
	if v2.Version != 2 || v2.BuildStatus != "Succeeded" || v2.Image != "image:v2" || !v2.Active || v2.Config["runtime"] != "python3.11" {
		t.Fatalf("version 2 %+v", v2)
	}
	if v2.BuildLog != nil {
		t.Fatal("the list carries build logs; only a single version should")
	}
	if len(vs.Activations) != 2 || vs.Activations[0].Version != 2 || vs.Activations[0].FromVersion != 1 || vs.Activations[0].Reason != "build" {
		t.Fatalf("activations %+v", vs.Activations)
	}
	// Version 2 serves: the function is Ready, version 3's failure beside it.
	fn := c.do("GET", c.p("/functions/fn"), nil).want(200).obj()
	if fn["phase"] != "Ready" || fn["message"] != "" || fn["active_version"] != 2.0 || fn["last_built_at"] == nil ||
		!reflect.DeepEqual(fn["last_build_failure"], map[string]any{"version": 3.0, "message": "SyntaxError: <bad> line 1"}) {
		t.Fatalf("function after a failed build: %v", fn)
	}

	one := c.do("GET", c.p("/functions/fn/versions/3"), nil).want(200).obj()
	if one["build_log"] != "build log of a failure" || one["build_status"] != "Failed" {
		t.Fatalf("version 3 alone: %v", one)
	}
	c.do("GET", c.p("/functions/fn/versions/9"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/functions/ghost/versions"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/functions/ghost/versions/1"), nil).wantError(404, "NOT_FOUND", "")

	// Rollback: to a failed version 422, to an unknown one 404.
	rollouts := f.countJobs("rollout", c.ns, "function", "fn")
	c.do("POST", c.p("/functions/fn/rollback"), map[string]any{"version": 3}).wantError(422, "UNPROCESSABLE", "", "Failed")
	c.do("POST", c.p("/functions/fn/rollback"), map[string]any{"version": 42}).wantError(404, "NOT_FOUND", "", "42")
	c.do("POST", c.p("/functions/ghost/rollback"), map[string]any{"version": 1}).wantError(404, "NOT_FOUND", "")

	// To a built one: active at once, recorded with who did it, rollout queued.
	fn = c.do("POST", c.p("/functions/fn/rollback"), map[string]any{"version": 1}).want(200).obj()
	if fn["active_version"] != 1.0 || fn["phase"] != "Ready" || fn["last_build_failure"].(map[string]any)["version"] != 3.0 {
		t.Fatalf("after rollback: %v", fn)
	}
	c.do("GET", c.p("/functions/fn/versions"), nil).want(200).decode(&vs)
	a := vs.Activations[0]
	if vs.ActiveVersion != 1 || a.Version != 1 || a.FromVersion != 2 || a.Reason != "rollback" || a.Actor != c.sub {
		t.Fatalf("activation %+v (active %d)", a, vs.ActiveVersion)
	}
	// The unique rollout job may have been pending already; at least one exists.
	if f.countJobs("rollout", c.ns, "function", "fn") < max(rollouts, 1) {
		t.Fatal("no rollout job after the rollback")
	}
	// Rolling back to the active version changes nothing.
	c.do("POST", c.p("/functions/fn/rollback"), map[string]any{"version": 1}).want(200)
	c.do("GET", c.p("/functions/fn/versions"), nil).want(200).decode(&vs)
	if len(vs.Activations) != 3 {
		t.Fatalf("a no-op rollback recorded an activation: %+v", vs.Activations)
	}
	// No build was queued by any rollback.
	if n := f.countJobs("build", c.ns, "function", "fn"); n != 3 {
		t.Fatalf("%d build jobs, want 3 (one per upload)", n)
	}
}

func TestConfigChangeWithCodeMakesAVersion(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("cfg")
	c.upload("cfg", handlerZip(t, "1")).want(202)
	f.build(c.ns, "cfg", 1, "")

	// Memory only: a new version reusing the built image, active at once.
	fn := c.do("PUT", c.p("/functions/cfg"), map[string]any{"memory_mb": 512}).want(200).obj()
	if fn["memory_mb"] != 512.0 || fn["active_version"] != 2.0 {
		t.Fatalf("after PUT: %v", fn)
	}
	var vs versionsAnswer
	c.do("GET", c.p("/functions/cfg/versions"), nil).want(200).decode(&vs)
	if len(vs.Versions) != 2 || vs.Versions[0].BuildStatus != "Succeeded" || vs.Versions[0].Image != "image:v1" ||
		vs.Versions[0].Config["memory_mb"] != 512.0 {
		t.Fatalf("versions after a config change: %+v", vs.Versions)
	}
	if n := f.countJobs("build", c.ns, "function", "cfg"); n != 1 {
		t.Fatalf("%d builds, want 1: the image is reused", n)
	}
	// The same config again: nothing new.
	c.do("PUT", c.p("/functions/cfg"), map[string]any{"memory_mb": 512}).want(200)
	c.do("GET", c.p("/functions/cfg/versions"), nil).want(200).decode(&vs)
	if len(vs.Versions) != 2 {
		t.Fatalf("an unchanged config made a version: %+v", vs.Versions)
	}
	// A new entrypoint needs a build.
	c.do("PUT", c.p("/functions/cfg"), map[string]any{"entrypoint": "handler.other"}).want(200)
	if n := f.countJobs("build", c.ns, "function", "cfg", "version", "3"); n != 1 {
		t.Fatal("no build queued for the entrypoint change")
	}
}

func TestRollbackShowsTheActiveVersionsConfig(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("fn")
	c.upload("fn", handlerZip(t, "1")).want(202)
	f.build(c.ns, "fn", 1, "")
	if fn := c.do("PUT", c.p("/functions/fn"), map[string]any{"memory_mb": 512}).want(200).obj(); fn["active_version"] != 2.0 {
		t.Fatalf("after PUT: %v", fn)
	}

	fn := c.do("POST", c.p("/functions/fn/rollback"), map[string]any{"version": 1}).want(200).obj()
	if fn["active_version"] != 1.0 || fn["memory_mb"] != 128.0 {
		t.Fatalf("rollback answered %v, want version 1's memory_mb 128", fn)
	}
	if fn := c.do("GET", c.p("/functions/fn"), nil).want(200).obj(); fn["memory_mb"] != 128.0 {
		t.Fatalf("GET after rollback: %v, want version 1's memory_mb 128", fn)
	}
	// A PUT merges over the active configuration, with the active code.
	fn = c.do("PUT", c.p("/functions/fn"), map[string]any{"timeout_sec": 60}).want(200).obj()
	if fn["memory_mb"] != 128.0 || fn["timeout_sec"] != 60.0 || fn["active_version"] != 3.0 {
		t.Fatalf("PUT after rollback: %v, want 128 MiB, 60 s, version 3", fn)
	}
	one := c.do("GET", c.p("/functions/fn/versions/3"), nil).want(200).obj()
	v1 := c.do("GET", c.p("/functions/fn/versions/1"), nil).want(200).obj()
	if one["digest"] != v1["digest"] || one["image"] != "image:v1" || one["build_status"] != "Succeeded" {
		t.Fatalf("version 3 %v, want version 1's code and build", one)
	}
	if n := f.countJobs("build", c.ns, "function", "fn"); n != 1 {
		t.Fatalf("%d builds, want 1", n)
	}
}

func TestUploadIdenticalToTheActiveVersion(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("fn")
	c.upload("fn", handlerZip(t, "1")).want(202)
	f.build(c.ns, "fn", 1, "")
	c.upload("fn", handlerZip(t, "2")).want(202)
	f.build(c.ns, "fn", 2, "")
	c.do("POST", c.p("/functions/fn/rollback"), map[string]any{"version": 1}).want(200)

	// Identical to the active version 1 (not the latest): 200 with it, nothing new.
	v := c.upload("fn", handlerZip(t, "1")).want(200).obj()
	if v["version"] != 1.0 || v["active"] != true {
		t.Fatalf("upload identical to the active version answered %v, want version 1", v)
	}
	var vs versionsAnswer
	c.do("GET", c.p("/functions/fn/versions"), nil).want(200).decode(&vs)
	if len(vs.Versions) != 2 || vs.ActiveVersion != 1 || f.countJobs("build", c.ns, "function", "fn") != 2 {
		t.Fatalf("an upload identical to the active version changed something: %+v", vs)
	}
	if _, ok := v["activation"]; ok {
		t.Fatalf("an unchanged upload answered an activation: %v", v)
	}
	// Identical to version 2, built and not active: version 2 is active
	// again, as a rollback makes it, and the answer says so.
	v = c.upload("fn", handlerZip(t, "2")).want(200).obj()
	a, _ := v["activation"].(map[string]any)
	if v["version"] != 2.0 || v["build_status"] != "Succeeded" || v["active"] != true ||
		a["version"] != 2.0 || a["from_version"] != 1.0 || a["reason"] != "upload" || a["actor"] != c.sub || a["activated_at"] == nil {
		t.Fatalf("upload identical to version 2 answered %v, want version 2 active again", v)
	}
	c.do("GET", c.p("/functions/fn/versions"), nil).want(200).decode(&vs)
	if len(vs.Versions) != 2 || vs.ActiveVersion != 2 || vs.Activations[0].Reason != "upload" || vs.Activations[0].Actor != c.sub ||
		vs.Activations[0].ActivatedAt != a["activated_at"] {
		t.Fatalf("after the upload of version 2's code: %+v", vs)
	}
	if n := f.countJobs("build", c.ns, "function", "fn"); n != 2 {
		t.Fatalf("%d builds, want 2", n)
	}
	if n := f.countJobs("rollout", c.ns, "function", "fn"); n < 1 {
		t.Fatal("no rollout job after the upload made version 2 active")
	}
}

// unfinishedBuilds counts the build jobs of version n that will still run.
func (f *fixture) unfinishedBuilds(ns, function string, n int) int {
	f.t.Helper()
	var count int
	err := f.pool.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE kind = 'build'
		AND args @> jsonb_build_object('namespace', $1::text, 'function', $2::text, 'version', $3::int)
		AND state IN ('available', 'scheduled', 'retryable', 'running', 'pending')`, ns, function, n).Scan(&count)
	if err != nil {
		f.t.Fatal(err)
	}
	return count
}

// loseBuild makes the build jobs of version n as good as gone: sql is run on
// them (a DELETE, or an UPDATE to a final state).
func (f *fixture) loseBuild(ns, function string, n int, sql string) {
	f.t.Helper()
	_, err := f.pool.Exec(context.Background(), sql+` WHERE kind = 'build'
		AND args @> jsonb_build_object('namespace', $1::text, 'function', $2::text, 'version', $3::int)`, ns, function, n)
	if err != nil {
		f.t.Fatal(err)
	}
}

func TestUploadAndRollbackRequeueALostBuild(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("fn")
	z := handlerZip(t, "1")
	c.upload("fn", z).want(202)
	f.execute(c.ns, "fn", func(fn *domain.Function) ([]domain.Event, error) { return fn.StartBuild(1, time.Now()) })

	// Building, with its job under way: an identical upload changes nothing.
	if v := c.upload("fn", z).want(200).obj(); v["version"] != 1.0 || v["build_status"] != "Building" {
		t.Fatalf("identical upload during the build answered %v", v)
	}
	if n := f.unfinishedBuilds(c.ns, "fn", 1); n != 1 {
		t.Fatalf("%d build jobs, want 1", n)
	}

	for _, lose := range []string{
		`UPDATE river_job SET state = 'discarded', finalized_at = now()`,
		`UPDATE river_job SET state = 'cancelled', finalized_at = now()`,
		`DELETE FROM river_job`,
	} {
		f.loseBuild(c.ns, "fn", 1, lose)
		if n := f.unfinishedBuilds(c.ns, "fn", 1); n != 0 {
			t.Fatalf("%s left %d build jobs", lose, n)
		}
		v := c.upload("fn", z).want(202).obj()
		if v["version"] != 1.0 || v["build_status"] != "Building" {
			t.Fatalf("identical upload of a lost build answered %v, want version 1", v)
		}
		if n := f.unfinishedBuilds(c.ns, "fn", 1); n != 1 {
			t.Fatalf("after %s and an identical upload: %d build jobs, want 1", lose, n)
		}
	}

	// A rollback to it queues the lost build too (202), and is refused while it runs.
	f.loseBuild(c.ns, "fn", 1, `DELETE FROM river_job`)
	if fn := c.do("POST", c.p("/functions/fn/rollback"), map[string]any{"version": 1}).want(202).obj(); fn["active_version"] != 0.0 {
		t.Fatalf("rollback to a lost build answered %v", fn)
	}
	if n := f.unfinishedBuilds(c.ns, "fn", 1); n != 1 {
		t.Fatalf("after a rollback to a lost build: %d build jobs, want 1", n)
	}
	c.do("POST", c.p("/functions/fn/rollback"), map[string]any{"version": 1}).wantError(422, "UNPROCESSABLE", "", "Building")
	var vs versionsAnswer
	c.do("GET", c.p("/functions/fn/versions"), nil).want(200).decode(&vs)
	if len(vs.Versions) != 1 {
		t.Fatalf("requeues made versions: %+v", vs.Versions)
	}
}
