package console

import (
	"fmt"
	"time"

	"github.com/slessio/sless/httpapi/listing"
	"github.com/slessio/sless/store"
)

// Geometry of a card's chart (SVG user units).
const (
	chartBarStep   = 10
	chartBarWidth  = 8
	chartHeight    = 40
	chartViewWidth = chartBuckets * chartBarStep
)

// chart is a card's bar chart of invocations and errors per hour, drawn on
// the server as SVG (no chart library, nothing from a CDN).
type chart struct {
	Bars          []bar
	Total, Errors int
	Width, Height int
	Label         string
}

// bar is one hour: the invocations' bar with the errors' bar over its foot.
type bar struct {
	X, Y, H, EY, EH float64
	W               int
	Title           string
}

// newChart draws buckets (nil for a function without invocations) starting at since.
func newChart(buckets []store.InvocationBucket, since time.Time) chart {
	ch := chart{Width: chartViewWidth, Height: chartHeight}
	peak := 1
	for _, b := range buckets {
		peak = max(peak, b.Count)
		ch.Total += b.Count
		ch.Errors += b.Errors
	}
	for i := range chartBuckets {
		var b store.InvocationBucket
		if i < len(buckets) {
			b = buckets[i]
		}
		start := since.Add(time.Duration(i) * chartWidth)
		h := float64(b.Count) / float64(peak) * chartHeight
		eh := float64(b.Errors) / float64(peak) * chartHeight
		ch.Bars = append(ch.Bars, bar{X: float64(i * chartBarStep), Y: chartHeight - h, H: h, EY: chartHeight - eh, EH: eh,
			W: chartBarWidth, Title: start.UTC().Format("Jan 2 15:04 UTC") + ": " + counts(b.Count, b.Errors)})
	}
	ch.Label = "last 24 hours: " + counts(ch.Total, ch.Errors)
	return ch
}

// counts says "1 invocation, 2 errors".
func counts(calls, errors int) string {
	return fmt.Sprintf("%d invocation%s, %d error%s", calls, listing.Plural(calls), errors, listing.Plural(errors))
}
