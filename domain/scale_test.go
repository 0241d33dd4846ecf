package domain

import (
	"testing"
	"time"
)

func TestScaleConfig(t *testing.T) {
	for _, c := range []struct {
		s     ScaleConfig
		field string // "" valid
	}{
		{ScaleConfig{}, ""},
		{ScaleConfig{MinInstances: 2, MaxInstances: 4, Concurrency: 8}, ""},
		{ScaleConfig{MinInstances: 3}, ""}, // max from the platform's default, checked there
		{ScaleConfig{MinInstances: -1}, "min_instances"},
		{ScaleConfig{MinInstances: MaxInstances + 1}, "min_instances"},
		{ScaleConfig{MaxInstances: MaxInstances + 1}, "max_instances"},
		{ScaleConfig{MinInstances: 3, MaxInstances: 2}, "min_instances"},
		{ScaleConfig{Concurrency: MaxInstanceConcurrency + 1}, "concurrency"},
		{ScaleConfig{Concurrency: -1}, "concurrency"},
	} {
		_, err := FunctionSpec{Runtime: "python3.11", Scale: c.s}.Config()
		if got := fieldOf(err); got != c.field {
			t.Errorf("%+v: %v (field %q), want field %q", c.s, err, got, c.field)
		}
	}
	if DefaultConcurrency(RuntimePython311) != 1 || DefaultConcurrency(RuntimeNodeJS20) != 1 || DefaultConcurrency(RuntimeGo123) != DefaultGoConcurrency {
		t.Error("default concurrency: want 1 for the interpreters, DefaultGoConcurrency for Go")
	}
}

// fieldOf is the field an EINVALID error names, "" for none.
func fieldOf(err error) string {
	if err == nil {
		return ""
	}
	if fe, ok := err.(*Error); ok {
		return fe.Field
	}
	return "?"
}

// A scale-only change makes no version, nor does uploading the same code
// after one, and a rollback keeps the scale configuration.
func TestScaleConfigIsTheFunctions(t *testing.T) {
	now := time.Now()
	f, apply := twoVersions(t, now)
	s := ScaleConfig{MinInstances: 1, MaxInstances: 3}
	evs, err := f.UpdateConfig(FunctionSpec{Runtime: "python3.11", MemoryMB: 256, Scale: s}, now)
	if err != nil || len(evs) != 1 {
		t.Fatalf("a scale-only change: %v %v; want one FunctionConfigUpdated and no version", evs, err)
	}
	apply(evs, nil)
	if evs, n, err := f.Upload(Code{Digest: "d1", ZipKey: "z/d1", ContextKey: "c/d1"}, now); err != nil || len(evs) != 0 || n != 2 {
		t.Fatalf("uploading the running code after a scale-only change: %v, version %d, %v; want nothing new, version 2", evs, n, err)
	}
	apply(f.Rollback(1, now))
	if f.Config.MemoryMB != DefaultMemoryMB || f.Config.Scale != s {
		t.Fatalf("after the rollback: memory %d, scale %+v; want version 1's memory and the function's scale %+v", f.Config.MemoryMB, f.Config.Scale, s)
	}
}
