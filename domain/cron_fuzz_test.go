package domain

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzParseCron: ParseCron never panics; it refuses with EINVALID about
// "schedule" and a message of bounded length (it quotes the trimmed
// expression at most), and what it accepts is short text without control
// characters whose Next is a later whole minute the schedule names, or the
// zero time for a date that does not come (Feb 30). The seeds in
// testdata/fuzz/FuzzParseCron run with go test.
func FuzzParseCron(f *testing.F) {
	from := time.Date(2026, 12, 1, 10, 2, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := ParseCron(expr)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != EINVALID || e.Field != "schedule" {
				t.Fatalf("ParseCron(%q): %v, want EINVALID about schedule", expr, err)
			}
			if len(e.Message) > 6*MaxScheduleLength+200 {
				t.Fatalf("ParseCron(%.40q...): a message of %d bytes", expr, len(e.Message))
			}
			return
		}
		spec := strings.TrimSpace(expr)
		if ValidateText("schedule", spec, MaxScheduleLength) != nil {
			t.Fatalf("ParseCron accepted %q", expr)
		}
		next := s.Next(from)
		if next.IsZero() {
			return
		}
		if !next.After(from) || next.Second() != 0 || next.Nanosecond() != 0 || next.Location() != time.UTC {
			t.Fatalf("%q.Next(%s) = %s", expr, from, next)
		}
		if s.minute&(1<<uint(next.Minute())) == 0 || s.hour&(1<<uint(next.Hour())) == 0 ||
			s.month&(1<<uint(next.Month())) == 0 || !s.dayMatches(next) {
			t.Fatalf("%q.Next(%s) = %s, which the schedule does not name", expr, from, next)
		}
		if again := s.Next(next); !again.IsZero() && !again.After(next) {
			t.Fatalf("%q.Next(%s) = %s, not later", expr, next, again)
		}
	})
}
