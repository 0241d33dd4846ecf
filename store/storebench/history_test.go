package storebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// history is the event log of a platform's life, decided by domain's own
// aggregates (their command methods, as the command layer calls them) and
// appended through store.Append: real events, in real streams.
type history struct {
	tb      testing.TB
	rng     *rand.Rand
	now     time.Time
	streams []*stream
	events  int
	// buildsFail says that one build in 20 fails (compile errors happen).
	buildsFail bool
}

// stream is one stream's events, in order.
type stream struct {
	id  string
	evs []domain.Event
}

func newHistory(tb testing.TB, seed uint64, start time.Time) *history {
	return &history{tb: tb, rng: rand.New(rand.NewPCG(seed, 4)), now: start, buildsFail: true}
}

// tick returns a later "now" for each decision.
func (h *history) tick() time.Time {
	h.now = h.now.Add(time.Duration(1+h.rng.IntN(600)) * time.Second)
	return h.now
}

// decided folds evs into agg and adds them to st; err fails the benchmark
// (every decision here is a valid one).
func (h *history) decided(st *stream, agg store.Aggregate, evs []domain.Event, err error) {
	h.tb.Helper()
	if err != nil {
		h.tb.Fatalf("%s: %v", st.id, err)
	}
	for _, e := range evs {
		agg.Apply(e)
	}
	st.evs = append(st.evs, evs...)
	h.events += len(evs)
}

func (h *history) newStream(id string) *stream {
	st := &stream{id: id}
	h.streams = append(h.streams, st)
	return st
}

// namespace ensures a namespace, as the first function created in it does.
func (h *history) namespace(ns string) {
	n := &domain.Namespace{Name: ns}
	st := h.newStream(domain.NamespaceStream(ns))
	evs, err := n.Ensure(h.tick())
	h.decided(st, n, evs, err)
}

// buildLog is what a successful Python build prints, about 1 KiB.
var buildLog = strings.Repeat("Collecting requests==2.32.3\n  Downloading requests-2.32.3-py3-none-any.whl (64 kB)\n", 12) +
	"Successfully installed certifi-2024.8.30 charset-normalizer-3.4.0 idna-3.10 requests-2.32.3 urllib3-2.2.3\n"

// function is the life of one function: created, then deploys uploads of
// new code (each built, activated and rolled out, or failing to build: see
// buildsFail) and
// configs configuration changes (a new version reusing the build), in a
// random order after the first deploy.
func (h *history) function(ns, name string, deploys, configs int) *domain.Function {
	f := domain.NewFunction(ns, name)
	st := h.newStream(domain.FunctionStream(ns, name))
	spec := domain.FunctionSpec{Runtime: "python3.11", MemoryMB: 128, TimeoutSec: 30,
		EnvVars: map[string]string{"LOG_LEVEL": "info", "REGION": "eu-west-1"}}
	evs, err := f.Create(spec, h.tick())
	h.decided(st, f, evs, err)
	code := 0
	rollout := func() {
		if f.ActiveVersion > 0 {
			evs, err := f.CompleteRollout(f.ActiveVersion, "127.0.0.1:"+fmt.Sprint(20000+h.rng.IntN(10000)), h.tick())
			h.decided(st, f, evs, err)
		}
	}
	deploy := func() {
		code++
		evs, n, err := f.Upload(domain.Code{Digest: fmt.Sprintf("sha256:%064x", h.rng.Uint64()),
			ZipKey: fmt.Sprintf("code/%s/%s/%d.zip", ns, name, code), ContextKey: fmt.Sprintf("ctx/%s/%s/%d.tar", ns, name, code)}, h.tick())
		h.decided(st, f, evs, err)
		if !f.NeedsBuild(n) {
			rollout()
			return
		}
		evs, err = f.StartBuild(n, h.tick())
		h.decided(st, f, evs, err)
		if h.buildsFail && h.rng.IntN(20) == 0 {
			evs, err = f.FailBuild(n, "pip install failed: No matching distribution found for requets", buildLog, h.tick())
			h.decided(st, f, evs, err)
			return
		}
		evs, err = f.SucceedBuild(n, fmt.Sprintf("registry.local/%s/%s:v%d", ns, name, n), buildLog, h.tick())
		h.decided(st, f, evs, err)
		rollout()
	}
	deploy()
	for deploys--; deploys+configs > 0; {
		if h.rng.IntN(deploys+configs) < deploys {
			deploys--
			deploy()
			continue
		}
		configs--
		spec.MemoryMB = 128 << h.rng.IntN(4)
		spec.EnvVars = map[string]string{"LOG_LEVEL": []string{"info", "debug", "warn"}[h.rng.IntN(3)], "REGION": "eu-west-1",
			"FEATURE": fmt.Sprint(h.rng.IntN(1000))}
		evs, err := f.UpdateConfig(spec, h.tick())
		h.decided(st, f, evs, err)
		rollout()
	}
	return f
}

// trigger creates a trigger of function fn, reported active by the
// driver, and switches it off and on again toggles times.
func (h *history) trigger(ns, name, fn string, typ domain.TriggerType, schedule string, toggles int) {
	t := domain.NewTrigger(ns, name)
	st := h.newStream(domain.TriggerStream(ns, name))
	evs, err := t.Create(domain.TriggerSpec{Type: string(typ), Function: fn, Schedule: schedule, Enabled: true}, h.tick())
	h.decided(st, t, evs, err)
	h.decided(st, t, t.SetActive(true, h.tick()), nil)
	for range toggles {
		for _, on := range []bool{false, true} {
			evs, err := t.SetEnabled(on, h.tick())
			h.decided(st, t, evs, err)
			h.decided(st, t, t.SetActive(on, h.tick()), nil)
		}
	}
}

// job creates a one-shot job of function fn and runs it runs times.
func (h *history) job(ns, name, fn string, runs int) {
	j := domain.NewJob(ns, name)
	st := h.newStream(domain.JobStream(ns, name))
	evs, err := j.Create(domain.JobSpec{Function: fn, Event: []byte(`{"report":"daily"}`), RunID: 1}, h.tick())
	h.decided(st, j, evs, err)
	for run := int64(1); run <= int64(runs); run++ {
		if run > 1 {
			evs, err := j.SetRunID(run, h.tick())
			h.decided(st, j, evs, err)
		}
		h.decided(st, j, j.Start(run, 1, h.tick()), nil)
		h.decided(st, j, j.Succeed(run, `{"rows": 1200}`, "exported 1200 rows\n", h.tick()), nil)
	}
}

// append stores the history with store.Append (no projector: the read
// models are the rebuild's to make), four writers at once, each stream's
// events in chunks of 10 to 40 taken round-robin across the writer's
// streams, so that the streams interleave in the log as they would.
func (h *history) append(s *store.Store) {
	h.tb.Helper()
	ctx := context.Background()
	s.SetProjector(nil)
	const writers = 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		rng := rand.New(rand.NewPCG(uint64(w), 5))
		wg.Go(func() {
			var mine []*stream
			for i := w; i < len(h.streams); i += writers {
				mine = append(mine, h.streams[i])
			}
			done := make([]int, len(mine))
			for left := len(mine); left > 0; {
				for k, st := range mine {
					if done[k] == len(st.evs) {
						continue
					}
					n := min(10+rng.IntN(31), len(st.evs)-done[k])
					batch := make([]store.NewEvent, n)
					for i, e := range st.evs[done[k] : done[k]+n] {
						batch[i] = store.NewEvent{Type: e.EventType(), Data: e}
					}
					meta := store.Metadata{Actor: "alice@example.com", RequestID: fmt.Sprintf("req-%016x", rng.Uint64())}
					if _, err := s.Append(ctx, st.id, int64(done[k]), batch, meta); err != nil {
						errs <- err
						return
					}
					if done[k] += n; done[k] == len(st.evs) {
						left--
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		h.tb.Fatal(err)
	}
}
