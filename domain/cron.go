package domain

import (
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed 5-field cron expression (minute hour day-of-month month
// day-of-week) or one of the @hourly-style macros, evaluated in UTC.
type Schedule struct {
	expr                          string
	minute, hour, dom, month, dow uint64 // bit sets
	domStar, dowStar              bool
}

var cronMacros = map[string]string{
	"@yearly":   "0 0 1 1 *",
	"@annually": "0 0 1 1 *",
	"@monthly":  "0 0 1 * *",
	"@weekly":   "0 0 * * 0",
	"@daily":    "0 0 * * *",
	"@midnight": "0 0 * * *",
	"@hourly":   "0 * * * *",
}

type cronField struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	monthNames = map[string]int{"JAN": 1, "FEB": 2, "MAR": 3, "APR": 4, "MAY": 5, "JUN": 6, "JUL": 7, "AUG": 8, "SEP": 9, "OCT": 10, "NOV": 11, "DEC": 12}
	dowNames   = map[string]int{"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
	cronFields = []cronField{
		{"minute", 0, 59, nil},
		{"hour", 0, 23, nil},
		{"day of month", 1, 31, nil},
		{"month", 1, 12, monthNames},
		{"day of week", 0, 7, dowNames},
	}
)

// ParseCron parses a standard 5-field cron expression or a macro (@yearly,
// @annually, @monthly, @weekly, @daily, @midnight, @hourly), spaces around
// it ignored. It returns EINVALID (field "schedule") with a message naming
// the bad field, also for an expression of more than MaxScheduleLength
// characters or with a control character (a tab or a line break too).
func ParseCron(expr string) (Schedule, error) {
	s := Schedule{expr: expr}
	spec := strings.TrimSpace(expr)
	if spec == "" {
		return s, FieldErrorf("schedule", "is required for a cron trigger")
	}
	if err := ValidateText("schedule", spec, MaxScheduleLength); err != nil {
		return s, err
	}
	text := spec // what messages quote: short, unlike expr with its spaces
	if strings.HasPrefix(spec, "@") {
		m, ok := cronMacros[strings.ToLower(spec)]
		if !ok {
			return s, FieldErrorf("schedule", "%q is not a known macro (use @hourly, @daily, @weekly, @monthly or @yearly)", text)
		}
		spec = m
	}
	parts := strings.Fields(spec)
	if len(parts) != 5 {
		return s, FieldErrorf("schedule", "%q must have 5 fields (minute hour day-of-month month day-of-week), not %d", text, len(parts))
	}
	sets := make([]uint64, 5)
	for i, p := range parts {
		bits, err := parseCronField(p, cronFields[i])
		if err != nil {
			return s, FieldErrorf("schedule", "%q: %s", text, err.Error())
		}
		sets[i] = bits
	}
	if sets[4]&(1<<7) != 0 { // 7 is Sunday too
		sets[4] = sets[4]&^(1<<7) | 1
	}
	s.minute, s.hour, s.dom, s.month, s.dow = sets[0], sets[1], sets[2], sets[3], sets[4]
	s.domStar, s.dowStar = parts[2] == "*" || parts[2] == "?", parts[4] == "*" || parts[4] == "?"
	return s, nil
}

type cronErr string

func (e cronErr) Error() string { return string(e) }

func parseCronField(p string, f cronField) (uint64, error) {
	var bits uint64
	for _, item := range strings.Split(p, ",") {
		rng, stepStr, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepStr)
			if err != nil || n < 1 {
				return 0, cronErr(f.name + " step " + strconv.Quote(stepStr) + " must be a positive number")
			}
			// A step past the field's range picks its first value only:
			// capped, v += step below cannot overflow.
			step = min(n, f.max+1)
		}
		lo, hi := f.min, f.max
		switch {
		case rng == "*" || rng == "?":
			if f.name == "day of week" {
				hi = 6
			}
		default:
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			if lo, err = cronValue(a, f); err != nil {
				return 0, err
			}
			hi = lo
			if isRange {
				if hi, err = cronValue(b, f); err != nil {
					return 0, err
				}
				if hi < lo {
					return 0, cronErr(f.name + " range " + strconv.Quote(rng) + " goes backwards")
				}
			} else if hasStep {
				hi = f.max
			}
		}
		for v := lo; v <= hi; v += step {
			bits |= 1 << uint(v)
		}
	}
	return bits, nil
}

func cronValue(s string, f cronField) (int, error) {
	if v, ok := f.names[strings.ToUpper(s)]; ok {
		return v, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < f.min || n > f.max {
		return 0, cronErr(f.name + " value " + strconv.Quote(s) + " must be between " + strconv.Itoa(f.min) + " and " + strconv.Itoa(f.max))
	}
	return n, nil
}

// String returns the expression the schedule was parsed from.
func (s Schedule) String() string { return s.expr }

// Next returns the first time strictly after t (in UTC, whole minutes) that the
// schedule fires, or the zero time if it never fires within five years
// (e.g. "0 0 30 2 *").
func (s Schedule) Next(t time.Time) time.Time {
	t = t.UTC().Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		if s.month&(1<<uint(t.Month())) == 0 {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if !s.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if s.hour&(1<<uint(t.Hour())) == 0 {
			t = t.Truncate(time.Hour).Add(time.Hour)
			continue
		}
		if s.minute&(1<<uint(t.Minute())) == 0 {
			t = t.Add(time.Minute)
			continue
		}
		return t
	}
	return time.Time{}
}

// dayMatches follows classic cron: when both day fields are restricted, either may match.
func (s Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	switch {
	case s.domStar && s.dowStar:
		return true
	case s.domStar:
		return dow
	case s.dowStar:
		return dom
	default:
		return dom || dow
	}
}
