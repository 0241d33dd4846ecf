package store_test

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store"
	"github.com/slessio/sless/store/pgtest"
)

// dbLink relays TCP connections to the test database; Cut breaks every
// connection and refuses new ones until Restore, as a database that went
// away (killed, restarted, unreachable) looks to its clients.
type dbLink struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]bool
	gate  sync.RWMutex // held by Freeze: nothing is relayed
}

func newDBLink(t *testing.T) (*dbLink, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &dbLink{ln: ln, target: net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))), conns: map[net.Conn]bool{}}
	go l.serve()
	t.Cleanup(func() { ln.Close(); l.Cut() })
	cfg.ConnConfig.Host, cfg.ConnConfig.Port = "127.0.0.1", uint16(ln.Addr().(*net.TCPAddr).Port)
	cfg.ConnConfig.ConnectTimeout = 2 * time.Second
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return l, pool
}

// newLinkedStore is a Store whose database connections go through a
// dbLink, and a namespace of the test's own.
func newLinkedStore(t *testing.T) (*dbLink, *store.Store, string) {
	t.Helper()
	link, pool := newDBLink(t)
	return link, store.New(pool, nil), testutil.UniqueNS(t)
}

func (l *dbLink) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.gate.RLock() // a frozen server accepts nothing
		l.gate.RUnlock()
		l.mu.Lock()
		if l.cut {
			l.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			l.mu.Unlock()
			c.Close()
			continue
		}
		l.conns[c], l.conns[up] = true, true
		l.mu.Unlock()
		go func() { l.relay(up, c); up.Close(); c.Close() }()
		go func() { l.relay(c, up); up.Close(); c.Close() }()
	}
}

// relay copies from src to dst, holding what it read while the link is frozen.
func (l *dbLink) relay(dst io.Writer, src io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			l.gate.RLock()
			_, werr := dst.Write(buf[:n])
			l.gate.RUnlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Freeze stops relaying without breaking anything, as a server that hangs
// (stopped, swapping, behind a dead network path) looks to its clients.
func (l *dbLink) Freeze() { l.gate.Lock() }

// Thaw relays again what Freeze held.
func (l *dbLink) Thaw() { l.gate.Unlock() }

// Cut breaks every relayed connection and refuses new ones.
func (l *dbLink) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = true
	for c := range l.conns {
		c.Close()
	}
	clear(l.conns)
}

// Restore relays again.
func (l *dbLink) Restore() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cut = false
}

// countLog counts the records with message text a slog.Logger got.
type countLog struct {
	mu    sync.Mutex
	lines []string
}

func (c *countLog) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, string(p))
	return len(p), nil
}

func (c *countLog) count(text string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, l := range c.lines {
		if strings.Contains(l, text) {
			n++
		}
	}
	return n
}

func countInvocations(t *testing.T, ns string) int {
	t.Helper()
	var n int
	if err := pgtest.Pool(t).QueryRow(context.Background(), `SELECT count(*) FROM invocations WHERE namespace = $1`, ns).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func recordN(t *testing.T, w *store.InvocationWriter, ns string, n int) {
	t.Helper()
	for i := range n {
		if !w.Record(store.Invocation{Namespace: ns, Function: "fn", Status: 200, Path: "/" + strconv.Itoa(i), Duration: time.Millisecond}) {
			t.Fatalf("record %d dropped: %+v", i, w.Stats())
		}
	}
}

// spoolWhileDown records n invocations in batches of batch through a
// writer that stopped while the database was away: they are all in the
// spool dir the writer had.
func spoolWhileDown(t *testing.T, batch, n int) (*dbLink, *store.Store, string, string, *store.InvocationWriter) {
	t.Helper()
	link, s, ns := newLinkedStore(t)
	dir := t.TempDir()
	link.Cut()
	w := s.NewInvocationWriter(store.InvocationWriterOptions{BatchSize: batch, SpoolDir: dir, Logger: discardLogger()})
	recordN(t, w, ns, n)
	if err := w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	return link, s, ns, dir, w
}

func spoolFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "*.copy"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A database that goes away loses no record: the batches it cannot take go
// to the spool, and are written when it is back, each once.
func TestInvocationLogSurvivesTheDatabaseGoingAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	link, s, ns := newLinkedStore(t)
	dir := t.TempDir()
	logs := &countLog{}
	w := s.NewInvocationWriter(store.InvocationWriterOptions{BatchSize: 500, FlushInterval: 10 * time.Millisecond,
		SpoolDir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	defer w.Close(ctx)

	recordN(t, w, ns, 1000)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	link.Cut()
	recordN(t, w, ns, 5000)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Spooled != 5000 || st.Failed != 0 || st.Dropped != 0 {
		t.Fatalf("while the database is away: stats %+v, want 5000 spooled", st)
	}
	if n := len(spoolFiles(t, dir)); n == 0 {
		t.Fatal("no spool file")
	}
	if n := logs.count("spooling them to disk"); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, strings.Join(logs.lines, ""))
	}
	link.Restore()
	recordN(t, w, ns, 1000) // behind the spool, in order
	testutil.WaitFor(t, 20*time.Second, func() bool { return w.Stats().Spooled == 0 })
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countInvocations(t, ns); n != 7000 {
		t.Fatalf("%d records stored, want 7000; stats %+v", n, w.Stats())
	}
	if st := w.Stats(); st.Written != 7000 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if n := len(spoolFiles(t, dir)); n != 0 {
		t.Fatalf("%d spool files left", n)
	}
}

// Records spooled by a process that stopped while the database was away are
// written by the next one; a spool file written twice stores its records once.
func TestInvocationSpoolIsWrittenByTheNextProcessOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	link, s, ns, dir, w := spoolWhileDown(t, 300, 1000)
	files := spoolFiles(t, dir)
	if st := w.Stats(); st.Spooled != 1000 || len(files) < 4 {
		t.Fatalf("stats %+v, %d files; want 1000 records spooled in batches of at most 300", st, len(files))
	}
	saved := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		saved[f] = b
	}

	link.Restore()
	w2 := s.NewInvocationWriter(store.InvocationWriterOptions{SpoolDir: dir, Logger: discardLogger()})
	if err := w2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countInvocations(t, ns); n != 1000 {
		t.Fatalf("%d records stored from the spool, want 1000", n)
	}
	w2.Close(ctx)
	// A crash between storing a batch and removing its file leaves it there.
	for f, b := range saved {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w3 := s.NewInvocationWriter(store.InvocationWriterOptions{SpoolDir: dir, Logger: discardLogger()})
	if err := w3.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w3.Close(ctx)
	if n := countInvocations(t, ns); n != 1000 {
		t.Fatalf("%d records stored after the spool was written twice, want 1000", n)
	}
	if st := w3.Stats(); st.Failed != 0 || st.Spooled != 0 || len(spoolFiles(t, dir)) != 0 {
		t.Fatalf("stats %+v, files %v", st, spoolFiles(t, dir))
	}
}

// Past its bound the spool takes nothing more: those records are counted
// lost and the loss is logged once.
func TestInvocationSpoolBoundLosesCountedRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	link, s, ns := newLinkedStore(t)
	link.Cut()
	logs := &countLog{}
	w := s.NewInvocationWriter(store.InvocationWriterOptions{BatchSize: 100, SpoolDir: t.TempDir(), SpoolBytes: 64 << 10,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	defer w.Close(ctx)
	recordN(t, w, ns, 3000)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st := w.Stats()
	if st.Spooled == 0 || st.Failed == 0 || st.Spooled+st.Failed != 3000 {
		t.Fatalf("stats %+v: want some spooled, the rest failed, 3000 in all", st)
	}
	if n := logs.count("invocation records lost"); n != 1 {
		t.Fatalf("the loss was logged %d times, want once", n)
	}
	link.Restore()
	testutil.WaitFor(t, 20*time.Second, func() bool { return w.Stats().Spooled == 0 })
	if n := countInvocations(t, ns); uint64(n) != st.Spooled {
		t.Fatalf("%d stored, want the %d spooled", n, st.Spooled)
	}
}

// Text a column refuses (NUL, invalid UTF-8) in one record does not cost its
// batch: the record is stored with it replaced.
func TestInvocationWithUnstorableTextKeepsItsBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := setup(t)
	ns := testutil.UniqueNS(t)
	w := s.NewInvocationWriter(store.InvocationWriterOptions{Logger: discardLogger()})
	recordN(t, w, ns, 10)
	w.Record(store.Invocation{Namespace: ns, Function: "fn", Status: 200, Method: "G\xffT", Path: "/a\x00b\xfe",
		Error: "bad \xc3", Log: "out \xff\x00 put"})
	recordN(t, w, ns, 10)
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countInvocations(t, ns); n != 21 {
		t.Fatalf("%d stored, want 21; stats %+v", n, w.Stats())
	}
}

// A database that hangs rather than refuses does not hold the writer up:
// past a short timeout batches go to the spool, records keep being taken,
// and all are stored when it answers again.
func TestInvocationLogKeepsTakingRecordsWhileTheDatabaseHangs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	link, s, ns := newLinkedStore(t)
	w := s.NewInvocationWriter(store.InvocationWriterOptions{Buffer: 4000, BatchSize: 500, FlushInterval: 10 * time.Millisecond,
		SpoolDir: t.TempDir(), Logger: discardLogger()})
	defer w.Close(ctx)
	recordN(t, w, ns, 1000)
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	link.Freeze()
	thaw := sync.OnceFunc(link.Thaw)
	defer thaw()
	total := 1000
	for end := time.Now().Add(8 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		recordN(t, w, ns, 100) // 1,000 a second: the buffer holds four seconds, twice a write's timeout
		total += 100
	}
	if st := w.Stats(); st.Spooled == 0 || st.Dropped != 0 {
		t.Fatalf("while the database hangs: stats %+v, want records spooled and none dropped", st)
	}
	thaw()
	testutil.WaitFor(t, 30*time.Second, func() bool { return w.Stats().Spooled == 0 })
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if n := countInvocations(t, ns); n != total {
		t.Fatalf("%d records stored, want %d; stats %+v", n, total, w.Stats())
	}
}

// A spool written before migration 00014 (rows of 16 fields, without
// async_id and attempt) is replayed after the upgrade with the columns its
// rows have.
func TestInvocationSpoolFromBeforeAsyncColumns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	link, s, ns, dir, _ := spoolWhileDown(t, 100, 250)
	for _, f := range spoolFiles(t, dir) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, firstFields(t, b, 16), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link.Restore()
	logs := &countLog{}
	w2 := s.NewInvocationWriter(store.InvocationWriterOptions{SpoolDir: dir, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err := w2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	w2.Close(ctx)
	if n := countInvocations(t, ns); n != 250 {
		t.Fatalf("%d records stored from an old spool, want 250; stats %+v\n%s", n, w2.Stats(), strings.Join(logs.lines, ""))
	}
}

// firstFields rewrites a binary COPY stream keeping the first n fields of
// every row, as a writer with fewer columns wrote it.
func firstFields(t *testing.T, stream []byte, n int) []byte {
	t.Helper()
	const header = 19
	out := append([]byte{}, stream[:header]...)
	rest := stream[header:]
	for {
		fields := int16(binary.BigEndian.Uint16(rest))
		rest = rest[2:]
		if fields == -1 {
			return binary.BigEndian.AppendUint16(out, 0xffff)
		}
		out = binary.BigEndian.AppendUint16(out, uint16(n))
		for i := range int(fields) {
			size := int32(binary.BigEndian.Uint32(rest))
			end := 4
			if size > 0 {
				end += int(size)
			}
			if i < n {
				out = append(out, rest[:end]...)
			}
			rest = rest[end:]
		}
	}
}
