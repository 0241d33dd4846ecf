package workers_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/workers"
)

func TestBuildMetricsCountEachOutcomeByRuntime(t *testing.T) {
	t.Parallel()
	h := setup(t)
	h.driver.setHooks(func(d *scriptedDriverForWorkerTests) {
		d.onBuild = func(ctx context.Context, b driver.BuildSpec) (driver.BuildResult, error) {
			switch b.Function {
			case "broken":
				return driver.BuildResult{Failed: true, Log: "SyntaxError"}, nil
			case "unbuildable": // no retry can help
				return driver.BuildResult{}, domain.Errorf(domain.EINVALID, "image name too long")
			}
			return driver.BuildResult{Image: "local/" + b.Function}, nil
		}
	})
	reg := prometheus.NewRegistry()
	h.start(func(c *workers.Config) { c.Registerer = reg })
	for _, fn := range []string{"fine", "broken", "unbuildable"} {
		h.createFunction(fn, pySpec)
		h.upload(fn, "d1")
	}
	h.eventually(10*time.Second, func() error {
		for fn, want := range map[string]domain.BuildStatus{"fine": domain.BuildStatusSucceeded,
			"broken": domain.BuildStatusFailed, "unbuildable": domain.BuildStatusFailed} {
			if v := h.version(fn, 1); v.BuildStatus != want {
				return errorf("%s v1 %s, want %s", fn, v.BuildStatus, want)
			}
		}
		return nil
	})
	for _, outcome := range []string{"succeeded", "failed", "error"} {
		labels := map[string]string{"runtime": "python3.11", "outcome": outcome}
		if n := counterValue(t, reg, "sless_builds_total", labels); n != 1 {
			t.Errorf("sless_builds_total%v = %v, want 1", labels, n)
		}
		if n := histogramCount(t, reg, "sless_build_duration_seconds", labels); n != 1 {
			t.Errorf("sless_build_duration_seconds%v has %d observations, want 1", labels, n)
		}
	}
}

func TestWorkersShareTheBuildSeriesOfOneRegistry(t *testing.T) {
	t.Parallel()
	h := setup(t)
	reg := prometheus.NewRegistry()
	for range 2 { // a second Workers in the process (tests, a restart) must not fail
		if _, err := workers.New(h.pool, workers.Config{Driver: h.driver, Registerer: reg}); err != nil {
			t.Fatal(err)
		}
	}
}

// metric returns the series of family name with exactly labels, or nil.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			return m
		}
	}
	return nil
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	return metric(t, reg, name, labels).GetCounter().GetValue()
}

func histogramCount(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) uint64 {
	t.Helper()
	return metric(t, reg, name, labels).GetHistogram().GetSampleCount()
}
