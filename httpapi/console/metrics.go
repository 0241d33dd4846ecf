package console

import (
	"net/http"
	"strconv"

	"github.com/slessio/sless/store"
)

// metricsView is a function page's Metrics panel: the last hour and the
// last day of its invocation log (store.FunctionInvocationStats, whose
// InvocationStats says what an error is).
type metricsView struct {
	Rows []metricsRow
	// None says the function has no invocation in the day: the panel says
	// so instead of a table of zeros.
	None bool
}

// metricsRow is one window of the panel, formatted for people.
type metricsRow struct {
	Key, Window       string // hour, day; as people read it
	Count, ColdStarts int
	PerMinute, Errors string
	P50, P99          string // "—" without invocations
	Failing           bool   // some invocations failed
}

// metricsView reads the Metrics panel of function ns/name.
func (c *Console) metricsView(r *http.Request, ns, name string) (metricsView, error) {
	st, err := c.cfg.Store.FunctionInvocationStats(r.Context(), ns, name, c.cfg.Now())
	if err != nil {
		return metricsView{}, err
	}
	return newMetricsView(st), nil
}

func newMetricsView(st store.FunctionStats) metricsView {
	v := metricsView{None: st.Day.Count == 0}
	for _, w := range []struct {
		key, label string
		s          store.InvocationStats
	}{{"hour", "last hour", st.Hour}, {"day", "last day", st.Day}} {
		row := metricsRow{Key: w.key, Window: w.label, Count: w.s.Count, ColdStarts: w.s.ColdStarts, PerMinute: perMinute(w.s.PerMinute()),
			Errors: strconv.Itoa(w.s.Errors), P50: "—", P99: "—", Failing: w.s.Errors > 0}
		if w.s.Errors > 0 {
			row.Errors += " (" + percent(w.s.ErrorPercent()) + ")"
		}
		if w.s.Count > 0 {
			row.P50, row.P99 = millis(w.s.P50), millis(w.s.P99)
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// perMinute formats a rate with two decimals, or as "< 0.01" when it is
// not zero but would show as such.
func perMinute(x float64) string {
	switch {
	case x == 0:
		return "0"
	case x < 0.005:
		return "< 0.01"
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'f', 2, 64)
}

// percent formats a share of errors with one decimal, or as "< 0.1%" when
// there are errors that would show as none.
func percent(x float64) string {
	if x > 0 && x < 0.05 {
		return "< 0.1%"
	}
	return strconv.FormatFloat(x, 'f', 1, 64) + "%"
}
