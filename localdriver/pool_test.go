package localdriver_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/localdriver"
)

// poolSetup is a driver with a warm pool of size processes per runtime,
// full and ready.
func poolSetup(t *testing.T, size int) env {
	t.Helper()
	e := setup(t, localdriver.Options{WarmPool: size})
	waitPool(t, e.d)
	return e
}

func waitPool(t testing.TB, d *localdriver.Driver) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.WaitPoolFull(ctx); err != nil {
		t.Fatalf("the warm pool did not fill: %v", err)
	}
}

// nodeConfig is a Node.js function; memory_mb 128 is the pool's, and so its
// V8 heap limit (NODE_OPTIONS, read when Node.js starts).
func nodeConfig(memoryMB int, env map[string]string) domain.FunctionConfig {
	return domain.FunctionConfig{Runtime: domain.RuntimeNodeJS20, Entrypoint: "handler.handle", MemoryMB: memoryMB, TimeoutSec: 30, EnvVars: env}
}

// manyFiles returns files and n more: a version too large for a pooled
// process to link in (poolMaxEntries).
func manyFiles(files map[string]string, n int) map[string]string {
	out := map[string]string{}
	for name, content := range files {
		out[name] = content
	}
	for i := range n {
		out["data/"+strconv.Itoa(i%20)+"/"+strconv.Itoa(i)+".txt"] = "x"
	}
	return out
}

var nodeHello = map[string]string{"handler.js": `const INSTANCE = Math.floor(Math.random() * 2 ** 48)
exports.handle = async () => ({ instance: INSTANCE, greeting: process.env.GREETING || '' })
`}

// TestWarmPoolServesTheFirstRequest: with the pool on, the first request of
// a new function is served by a process that was in the pool before the
// function was deployed, with the function's variables; a function whose
// start-time settings differ from the pool's (Node.js with another
// memory_mb) or one with more files than it is worth linking gets a
// process of its own.
func TestWarmPoolServesTheFirstRequest(t *testing.T) {
	t.Parallel()
	e := poolSetup(t, 2)
	cases := []struct {
		name, runtime string
		cfg           domain.FunctionConfig
		files         map[string]string
		pooled        bool
	}{
		{"python", "python3.11", pyConfig(map[string]string{"GREETING": "from the pool", "TZ": "Europe/Paris"}), pyHello, true},
		{"nodejs", "nodejs20", nodeConfig(128, map[string]string{"GREETING": "from the pool"}), nodeHello, true},
		{"nodejs-other-heap", "nodejs20", nodeConfig(256, map[string]string{"GREETING": "from the pool"}), nodeHello, false},
		{"python-many-files", "python3.11", pyConfig(map[string]string{"GREETING": "from the pool"}), manyFiles(pyHello, 2000), false},
	}
	for _, c := range cases {
		w := e.mustBuild(t, ns, "first-"+c.name, 1, c.cfg, c.files)
		waitPool(t, e.d)
		pool, _ := e.d.PoolPIDs(c.runtime)
		ep := e.mustDeploy(t, w)
		pid := e.d.InstancePID(ep)
		if got := slices.Contains(pool, pid); got != c.pooled {
			t.Errorf("%s: served by pid %d, the pool held %v: pooled = %v, want %v", c.name, pid, pool, got, c.pooled)
		}
		if h := mustHello(t, ep); h.Greeting != "from the pool" {
			t.Errorf("%s: GREETING = %q, want the function's variable", c.name, h.Greeting)
		}
	}
}

// TestPooledProcessServesOneTenantOnly deploys functions of two tenants in
// turn through a pool of one process per runtime: each is served by a
// process that was in the pool, never by one that served another function,
// and a process that served never comes back to the pool, also after its
// function stopped.
func TestPooledProcessServesOneTenantOnly(t *testing.T) {
	t.Parallel()
	e := poolSetup(t, 1)
	const tenantA, tenantB = "sless-00000000000000aa", "sless-00000000000000bb"
	served := map[int]string{} // host pid → the function it served
	for round := range 3 {
		for _, tenant := range []string{tenantA, tenantB} {
			fn := "hello"
			w := e.mustBuild(t, tenant, fn, round+1, pyConfig(nil), pyHello)
			waitPool(t, e.d)
			pool, _ := e.d.PoolPIDs("python3.11")
			for _, pid := range pool {
				if who, ok := served[pid]; ok {
					t.Fatalf("pid %d, which served %s, is in the pool again", pid, who)
				}
			}
			ep := e.mustDeploy(t, w)
			pid := e.d.InstancePID(ep)
			if !slices.Contains(pool, pid) {
				t.Fatalf("%s/%s v%d: served by pid %d, not by the pool's %v", tenant, fn, round+1, pid, pool)
			}
			if who, ok := served[pid]; ok {
				t.Fatalf("%s/%s v%d: served by pid %d, which served %s before", tenant, fn, round+1, pid, who)
			}
			served[pid] = tenant + "/" + fn
			mustHello(t, ep)
			if now, _ := e.d.PoolPIDs("python3.11"); slices.Contains(now, pid) {
				t.Fatalf("pid %d serves %s and is in the pool", pid, served[pid])
			}
			if round == 2 { // scaled to zero: its process ends, it does not go back
				if _, err := e.d.Deploy(context.Background(), driver.Deployment{Workload: w}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	waitPool(t, e.d)
	pool, _ := e.d.PoolPIDs("python3.11")
	for _, pid := range pool {
		if who, ok := served[pid]; ok {
			t.Fatalf("pid %d, which served %s, is in the pool again", pid, who)
		}
	}
}

// poolProbe reports what a pooled process runs as once it serves: its ids,
// the capability lines of every thread, what /app holds, its passwd entry,
// its environment and working directory.
var poolProbes = map[string]map[string]string{
	"python3.11": {"handler.py": `import os


def status(task):
    with open("/proc/self/task/%s/status" % task) as f:
        return [l.strip() for l in f if l.startswith(("Cap", "NoNewPrivs", "Groups"))]


def handle(event):
    if event.get("mb"):
        data = bytearray(event["mb"] << 20)
        for i in range(0, len(data), 4096):
            data[i] = 1
        return len(data) >> 20
    files = []
    for root, dirs, names in os.walk("/app"):
        files += [os.path.relpath(os.path.join(root, n), "/app") for n in dirs + names]
    return {"uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(), "groups": os.getgroups(),
            "status": {t: status(t) for t in os.listdir("/proc/self/task")},
            "app": sorted(files), "cwd": os.getcwd(), "env": sorted(os.environ),
            "passwd": [l for l in open("/etc/passwd") if l.startswith("sless:")]}
`},
	"nodejs20": {"handler.js": `const fs = require('fs')
const path = require('path')
function status (task) {
  return fs.readFileSync('/proc/self/task/' + task + '/status', 'utf8').split('\n')
    .filter((l) => /^(Cap|NoNewPrivs|Groups)/.test(l)).map((l) => l.trim())
}
function walk (dir, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name)
    out.push(path.relative('/app', p))
    if (e.isDirectory()) walk(p, out)
  }
  return out
}
exports.handle = async () => {
  const st = {}
  for (const t of fs.readdirSync('/proc/self/task')) st[t] = status(t)
  return {
    uid: process.getuid(), gid: process.getgid(), euid: process.geteuid(), groups: process.getgroups(),
    status: st, app: walk('/app', []).sort(), cwd: process.cwd(), env: Object.keys(process.env).sort(),
    passwd: fs.readFileSync('/etc/passwd', 'utf8').split('\n').filter((l) => l.startsWith('sless:')).map((l) => l + '\n')
  }
}
`},
}

type probe struct {
	UID, GID, EUID int
	Groups         []int
	Status         map[string][]string
	App            []string
	Cwd            string
	Env            []string
	Passwd         []string
}

// TestPooledProcessIsSandboxedAsItsTenant: once it serves, a pooled process
// runs as its tenant's uid and gid with no groups and no capability (a
// Node.js process keeps CAP_SETUID and CAP_SETGID in its bounding set, which
// it cannot empty, and no_new_privs makes it useless), sees at /app its
// version's files and nothing else, and is held to its function's memory_mb,
// below or above the pool's own.
func TestPooledProcessIsSandboxedAsItsTenant(t *testing.T) {
	t.Parallel()
	e := poolSetup(t, 1)
	const tenant = "sless-00000000000000cc"
	for runtime, files := range poolProbes {
		cfg := pyConfig(map[string]string{"OWN": "1"})
		bounding := "0000000000000000"
		if runtime == "nodejs20" {
			cfg = nodeConfig(128, map[string]string{"OWN": "1"})
			bounding = "00000000000000c0" // CAP_SETUID, CAP_SETGID
		}
		t.Run(runtime, func(t *testing.T) {
			w := e.mustBuild(t, tenant, "probe-"+strings.TrimSuffix(runtime, ".11"), 1, cfg, files)
			waitPool(t, e.d)
			pool, _ := e.d.PoolPIDs(runtime)
			ep := e.mustDeploy(t, w)
			if pid := e.d.InstancePID(ep); !slices.Contains(pool, pid) {
				t.Fatalf("served by pid %d, not by the pool's %v", pid, pool)
			}
			var got probe
			getJSON(t, ep, "{}", &got)
			uid, gid, err := e.d.Sandbox().Owner(tenant)
			if err != nil {
				t.Fatal(err)
			}
			if got.UID != uid || got.EUID != uid || got.GID != gid || len(got.Groups) > 0 && !(len(got.Groups) == 1 && got.Groups[0] == gid) {
				t.Errorf("runs as uid %d (euid %d) gid %d groups %v, want the tenant's %d:%d", got.UID, got.EUID, got.GID, got.Groups, uid, gid)
			}
			if os.Geteuid() == 0 && (len(got.Passwd) != 1 || !strings.Contains(got.Passwd[0], ":"+itoa(uid)+":")) {
				t.Errorf("/etc/passwd names sless as %q, want uid %d", got.Passwd, uid)
			}
			if len(got.Status) == 0 {
				t.Fatal("no thread reported")
			}
			for task, lines := range got.Status {
				want := []string{"CapAmb:\t0000000000000000", "CapBnd:\t" + bounding, "CapEff:\t0000000000000000",
					"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "Groups:", "NoNewPrivs:\t1"}
				sort.Strings(lines)
				if os.Geteuid() != 0 && len(lines) > 1 { // a user namespace's: bwrap's to set
					want[1] = lines[1]
				}
				if !slices.Equal(lines, want) {
					t.Errorf("thread %s: %q, want %q", task, lines, want)
				}
			}
			var app []string
			version := filepath.Join(e.dir, "builds", tenant, w.Function, "v1")
			_ = filepath.WalkDir(version, func(p string, _ os.DirEntry, _ error) error {
				if p != version {
					rel, _ := filepath.Rel(version, p)
					app = append(app, rel)
				}
				return nil
			})
			sort.Strings(app)
			if !slices.Equal(got.App, app) {
				t.Errorf("/app holds %q, want the version's %q", got.App, app)
			}
			if got.Cwd != "/app/function" {
				t.Errorf("working directory %q, want /app/function", got.Cwd)
			}
			for _, name := range got.Env {
				if strings.HasPrefix(name, "SLESS_CONTROL") {
					t.Errorf("the function sees %s", name)
				}
			}
			if !slices.Contains(got.Env, "OWN") || !slices.Contains(got.Env, "SLESS_CONCURRENCY") {
				t.Errorf("environment %q lacks OWN or SLESS_CONCURRENCY", got.Env)
			}
		})
	}
	t.Run("memory", func(t *testing.T) {
		for _, c := range []struct {
			memoryMB, allocMB int
			fits              bool
		}{{64, 96, false}, {256, 160, true}} { // the pool's processes start at 128
			cfg := pyConfig(nil)
			cfg.MemoryMB = c.memoryMB
			w := e.mustBuild(t, tenant, "mem-"+itoa(c.memoryMB), 1, cfg, poolProbes["python3.11"])
			waitPool(t, e.d)
			pool, _ := e.d.PoolPIDs("python3.11")
			ep := e.mustDeploy(t, w)
			if pid := e.d.InstancePID(ep); !slices.Contains(pool, pid) {
				t.Fatalf("memory_mb %d: served by pid %d, not by the pool's %v", c.memoryMB, pid, pool)
			}
			var mb int
			err := postJSON(ep, `{"mb": `+itoa(c.allocMB)+`}`, &mb)
			if c.fits {
				if err != nil || mb != c.allocMB {
					t.Errorf("%d MiB within memory_mb %d: %d, %v", c.allocMB, c.memoryMB, mb, err)
				}
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			reason := e.d.ExitReason(ctx, ep)
			cancel()
			if err == nil || reason != "out of memory ("+itoa(c.memoryMB)+" MiB)" {
				t.Errorf("%d MiB with memory_mb %d: answered %d, %v; exit %q", c.allocMB, c.memoryMB, mb, err, reason)
			}
		}
	})
}

func getJSON(t *testing.T, endpoint, body string, v any) {
	t.Helper()
	if err := postJSON(endpoint, body, v); err != nil {
		t.Fatal(err)
	}
}

func postJSON(endpoint, body string, v any) error {
	resp, err := fresh.Post(testutil.EndpointURL(endpoint)+"/", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

func itoa(n int) string { return strconv.Itoa(n) }
