package workers

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

// The outcome label of the build series: a build attempt either produced
// an image, failed on the function's code (its log says why), or could not
// be run by the platform (a driver or code store error: retried, and the
// version fails with domain.BuildCouldNotRun once no attempt is left).
const (
	buildSucceeded = "succeeded"
	buildFailed    = "failed"
	buildError     = "error"
)

// buildBuckets span a cached rebuild (a second) to an image built from
// scratch over a slow link (half an hour, the default build timeout).
var buildBuckets = []float64{1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800}

// buildMetrics are the build worker's series, by runtime (a fixed set:
// domain.Runtime) and outcome. An attempt interrupted by a stop is in
// neither: it runs again.
type buildMetrics struct {
	duration *prometheus.HistogramVec // sless_build_duration_seconds: the stored code's check and Driver.Build
	total    *prometheus.CounterVec   // sless_builds_total
}

// newBuildMetrics makes the build series and registers them with reg (nil:
// kept, not exported). Series another Workers registered already are
// shared.
func newBuildMetrics(reg prometheus.Registerer) (*buildMetrics, error) {
	labels := []string{"runtime", "outcome"}
	m := &buildMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sless_build_duration_seconds",
			Help:    "Duration of build attempts (the stored code's check and the driver's build) by runtime and outcome: succeeded, failed (the code did not build), error (the platform could not build it; retried).",
			Buckets: buildBuckets}, labels),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sless_builds_total",
			Help: "Build attempts by runtime and outcome: succeeded, failed (the code did not build), error (the platform could not build it; retried)."}, labels),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.duration, err = register(reg, m.duration); err != nil {
		return nil, err
	}
	if m.total, err = register(reg, m.total); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers c with reg, or returns the collector of the same
// description registered before.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	if err != nil {
		return c, domain.Errorf(domain.EINVALID, "workers: register metrics: %v", err)
	}
	return c, nil
}

// observe records one build attempt.
func (m *buildMetrics) observe(runtime domain.Runtime, outcome string, d time.Duration) {
	m.duration.WithLabelValues(string(runtime), outcome).Observe(d.Seconds())
	m.total.WithLabelValues(string(runtime), outcome).Inc()
}

// buildOutcome is the outcome label of an attempt that ended with res and
// err, and false for one a stop interrupted (ctx cancelled), which is not
// counted. One that ran past the build timeout could not be built: error.
func buildOutcome(ctx context.Context, res driver.BuildResult, err error) (string, bool) {
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return "", false
	case err != nil || ctx.Err() != nil:
		return buildError, true
	case res.Failed:
		return buildFailed, true
	}
	return buildSucceeded, true
}
