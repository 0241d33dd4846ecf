package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
)

type created struct {
	Runtime string `json:"runtime"`
	Memory  int    `json:"memory_mib"`
}

func TestAppendAndReadStream(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	ns := testutil.UniqueNS(t)
	id := stream(ns, "hello")
	meta := store.Metadata{Actor: "alice", RequestID: "req-1", CausationID: "job-7"}

	got, err := s.Append(ctx, id, 0, []store.NewEvent{
		{Type: "function.created", Data: created{Runtime: "python3.11", Memory: 128}},
		{Type: "function.note", Data: json.RawMessage(`{"text": "raw"}`)},
	}, meta)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Append returned %d events, want 2", len(got))
	}
	for i, ev := range got {
		if ev.StreamVersion != int64(i+1) || ev.StreamID != id || ev.Namespace != ns || ev.Metadata != meta {
			t.Errorf("event %d = %+v, want version %d of %s in namespace %s with %+v", i, ev, i+1, id, ns, meta)
		}
		if ev.TxID == 0 || ev.TxID != got[0].TxID {
			t.Errorf("event %d tx_id %d: want one non-zero transaction id for the batch (%d)", i, ev.TxID, got[0].TxID)
		}
	}
	if got[1].Position <= got[0].Position {
		t.Errorf("positions %d, %d not increasing", got[0].Position, got[1].Position)
	}

	read, err := s.ReadStream(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != 2 {
		t.Fatalf("ReadStream returned %d events, want 2", len(read))
	}
	for i := range read {
		if read[i].Position != got[i].Position || read[i].Type != got[i].Type ||
			string(read[i].Data) != string(got[i].Data) || read[i].Metadata != meta ||
			!read[i].RecordedAt.Equal(got[i].RecordedAt) || read[i].TxID != got[i].TxID {
			t.Errorf("read %+v, appended %+v", read[i], got[i])
		}
	}
	var c created
	if err := json.Unmarshal(read[0].Data, &c); err != nil || c != (created{"python3.11", 128}) {
		t.Errorf("data %s does not round-trip (%v)", read[0].Data, err)
	}
	if string(read[1].Data) != `{"text": "raw"}` {
		t.Errorf("raw data stored as %s", read[1].Data)
	}

	if from2, err := s.ReadStream(ctx, id, 2); err != nil || len(from2) != 1 || from2[0].StreamVersion != 2 {
		t.Errorf("ReadStream from version 2 = %+v, %v; want only version 2", from2, err)
	}
	if none, err := s.ReadStream(ctx, stream(ns, "missing"), 0); err != nil || len(none) != 0 {
		t.Errorf("ReadStream of a missing stream = %+v, %v; want empty", none, err)
	}
	if v, err := s.StreamVersion(ctx, id); err != nil || v != 2 {
		t.Errorf("StreamVersion = %d, %v; want 2", v, err)
	}

	third, err := s.Append(ctx, id, 2, []store.NewEvent{{Type: "function.updated", Data: map[string]int{"memory_mib": 256}}}, meta)
	if err != nil {
		t.Fatal(err)
	}
	if third[0].StreamVersion != 3 {
		t.Fatalf("third append at version %d, want 3", third[0].StreamVersion)
	}
}

func TestAppendWrongExpectedVersionConflicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	id := stream(testutil.UniqueNS(t), "f")
	ev := []store.NewEvent{{Type: "function.created", Data: map[string]string{}}}
	if _, err := s.Append(ctx, id, 0, ev, store.Metadata{}); err != nil {
		t.Fatal(err)
	}
	for _, expected := range []int64{0, 2, 7} {
		_, err := s.Append(ctx, id, expected, ev, store.Metadata{})
		testutil.RequireCode(t, err, domain.ECONFLICT)
		if msg := domain.ErrorMessage(err); !strings.Contains(msg, "at version 1") {
			t.Errorf("expected %d: message %q does not say the stream is at version 1", expected, msg)
		}
	}
	if v, _ := s.StreamVersion(ctx, id); v != 1 {
		t.Fatalf("stream at version %d after failed appends, want 1", v)
	}
}

func TestAppendRejectsBadArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	id := stream(testutil.UniqueNS(t), "f")
	ok := []store.NewEvent{{Type: "x", Data: 1}}
	for name, call := range map[string]func() error{
		"empty stream":     func() error { _, err := s.Append(ctx, "", 0, ok, store.Metadata{}); return err },
		"negative version": func() error { _, err := s.Append(ctx, id, -1, ok, store.Metadata{}); return err },
		"no events":        func() error { _, err := s.Append(ctx, id, 0, nil, store.Metadata{}); return err },
		"untyped event": func() error {
			_, err := s.Append(ctx, id, 0, []store.NewEvent{{Data: 1}}, store.Metadata{})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { testutil.RequireCode(t, call(), domain.EINVALID) })
	}
	if v, _ := s.StreamVersion(ctx, id); v != 0 {
		t.Fatalf("stream at version %d after rejected appends, want 0", v)
	}
}

// TestConcurrentAppendsAtSameVersion starts 20 writers that all expect a new
// stream: exactly one wins, the others get CONFLICT.
func TestConcurrentAppendsAtSameVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	id := stream(testutil.UniqueNS(t), "race")
	const writers = 20
	start := make(chan struct{})
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			<-start
			_, errs[i] = s.Append(ctx, id, 0, []store.NewEvent{{Type: "function.created", Data: map[string]int{"writer": i}}}, store.Metadata{})
		})
	}
	close(start)
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
			continue
		}
		testutil.RequireCode(t, err, domain.ECONFLICT)
	}
	if wins != 1 {
		t.Fatalf("%d writers won version 1, want exactly 1", wins)
	}
	if events, _ := s.ReadStream(ctx, id, 0); len(events) != 1 {
		t.Fatalf("stream has %d events, want 1", len(events))
	}
}

// TestConcurrentAppendsTakeEachVersionOnce runs 20 writers that each append 5
// events to one stream, reloading the version and retrying on CONFLICT, as a
// command handler does. Every version must be taken exactly once.
func TestConcurrentAppendsTakeEachVersionOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	id := stream(testutil.UniqueNS(t), "counter")
	const writers, each = 20, 5
	type mark struct{ Writer, Seq int }
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		conflicts int
		failures  []error
	)
	for w := range writers {
		wg.Go(func() {
			for seq := 0; seq < each; {
				v, err := s.StreamVersion(ctx, id)
				if err == nil {
					_, err = s.Append(ctx, id, v, []store.NewEvent{{Type: "counter.incremented", Data: mark{w, seq}}}, store.Metadata{})
				}
				mu.Lock()
				switch code := domain.ErrorCode(err); {
				case err == nil:
					seq++
				case code == domain.ECONFLICT:
					conflicts++
				default:
					failures = append(failures, err)
					seq = each
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, err := range failures {
		t.Errorf("append failed with something other than CONFLICT: %v", err)
	}

	events, err := s.ReadStream(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != writers*each {
		t.Fatalf("stream has %d events, want %d", len(events), writers*each)
	}
	seen := map[mark]bool{}
	for i, ev := range events {
		if ev.StreamVersion != int64(i+1) {
			t.Fatalf("event %d has version %d: versions must be 1..%d without gaps or repeats", i, ev.StreamVersion, writers*each)
		}
		var m mark
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			t.Fatal(err)
		}
		if seen[m] {
			t.Fatalf("writer %d's event %d stored twice", m.Writer, m.Seq)
		}
		seen[m] = true
	}
	if conflicts == 0 {
		t.Log("no conflicts happened: the writers did not overlap this time")
	}
	t.Logf("%d appends, %d conflicts retried", writers*each, conflicts)
}

func TestNamespaceOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"function:team-a/hello":           "team-a",
		domain.FunctionStream("ns1", "f"): "ns1",
		domain.NamespaceStream("ns2"):     "ns2",
		"job:ns/run/with/slashes":         "ns",
		"no-kind/name":                    "",
		"kind:no-slash":                   "",
		"":                                "",
	} {
		if got := store.NamespaceOf(in); got != want {
			t.Errorf("NamespaceOf(%q) = %q, want %q", in, got, want)
		}
	}
}
