package console

import (
	"strconv"
	"strings"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/listing"
)

// eventSummary is a line saying what an event of the history means, for
// the events whose payload alone does not read well; "" for the others
// (the history shows every event's type and payload).
func eventSummary(typ string, data []byte) string {
	ev, err := domain.DecodeEvent(typ, data)
	if err != nil {
		return ""
	}
	switch e := ev.(type) {
	case domain.AsyncDeadLettered:
		s := "async invocation " + e.InvocationID + " dead-lettered after " + counted(e.Attempts, "attempt")
		if e.Status != 0 {
			s += ", last status " + strconv.Itoa(e.Status)
		} else {
			s += ", no answer"
		}
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	case domain.DeadLetterRetried:
		return "dead letter " + e.InvocationID + " queued again"
	case domain.DeadLettersDeleted:
		if e.All {
			return "all dead letters deleted (" + strconv.Itoa(e.Count) + ")"
		}
		return counted(e.Count, "dead letter") + " deleted: " + strings.Join(e.InvocationIDs, ", ")
	}
	return ""
}

// counted is "1 attempt", "3 attempts".
func counted(n int, noun string) string { return strconv.Itoa(n) + " " + noun + listing.Plural(n) }
