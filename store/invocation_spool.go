package store

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultInvocationSpoolBytes bounds the on-disk spool of the invocation log
// when InvocationWriterOptions.SpoolBytes is 0.
const DefaultInvocationSpoolBytes = 256 << 20

// errSpoolFull is what put returns past the spool's bound.
var errSpoolFull = errors.New("the invocation spool is full")

// invocationSpool keeps, on disk, the batches of the invocation log that the
// database could not take, until it can. A batch is one file holding its
// COPY stream exactly as the writer sent it (PostgreSQL's binary COPY
// format), so spooling costs one write and replaying one COPY. Files are
// named so that their order is the order the batches came in, and say how
// many records they hold and which days (partitions) those fall on:
//
//	<sequence, 16 digits>-<records>-<first day>-<last day>.copy
//
// A file is written under a temporary name and renamed, so a crash leaves
// whole files or none (a leftover temporary file is removed at the next
// open). The writer's goroutine adds batches, its replayer takes them.
type invocationSpool struct {
	dir     string
	max     int64         // bytes the files may add up to
	records atomic.Uint64 // records in the files

	mu    sync.Mutex
	size  int64       // bytes the files add up to
	files []spoolFile // oldest first
	next  uint64      // sequence number of the next file
}

// spoolFile is one spooled batch.
type spoolFile struct {
	name      string
	seq       uint64
	records   int
	from, to  time.Time // the days of the first and last record's partitions
	sizeBytes int64
}

const (
	spoolSuffix    = ".copy"
	spoolTmpPrefix = ".tmp-"
	spoolDayFormat = "20060102"
)

// openSpool opens the spool in dir (created 0700 unless it exists), keeping
// the batches a previous process left there, and at most max bytes.
func openSpool(dir string, max int64) (*invocationSpool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	s := &invocationSpool{dir: dir, max: max}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, spoolTmpPrefix) { // a write a crash interrupted: never acknowledged
			_ = os.Remove(filepath.Join(dir, name))
			continue
		}
		f, ok := parseSpoolName(name)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			return nil, err
		}
		f.sizeBytes = info.Size()
		s.files = append(s.files, f)
		s.size += f.sizeBytes
		s.records.Add(uint64(f.records))
	}
	slices.SortFunc(s.files, func(a, b spoolFile) int { return cmp.Compare(a.seq, b.seq) })
	if n := len(s.files); n > 0 {
		s.next = s.files[n-1].seq + 1
	}
	return s, nil
}

// parseSpoolName reads what a file name says, see invocationSpool.
func parseSpoolName(name string) (spoolFile, bool) {
	parts := strings.Split(strings.TrimSuffix(name, spoolSuffix), "-")
	if !strings.HasSuffix(name, spoolSuffix) || len(parts) != 4 {
		return spoolFile{}, false
	}
	seq, err1 := strconv.ParseUint(parts[0], 10, 64)
	records, err2 := strconv.Atoi(parts[1])
	from, err3 := time.Parse(spoolDayFormat, parts[2])
	to, err4 := time.Parse(spoolDayFormat, parts[3])
	if err := errors.Join(err1, err2, err3, err4); err != nil || records <= 0 {
		return spoolFile{}, false
	}
	return spoolFile{name: name, seq: seq, records: records, from: from, to: to}, true
}

// empty reports whether no batch waits.
func (s *invocationSpool) empty() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.files) == 0
}

// put stores a batch of records whose COPY stream is stream and whose
// partitions are from's through to's days. Past the bound it stores nothing
// and returns errSpoolFull; a failed write (the disk is full, say) leaves
// nothing behind and returns the error.
func (s *invocationSpool) put(stream []byte, records int, from, to time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.size+int64(len(stream)) > s.max {
		return errSpoolFull
	}
	f := spoolFile{seq: s.next, records: records, from: day(from), to: day(to), sizeBytes: int64(len(stream))}
	f.name = fmt.Sprintf("%016d-%d-%s-%s%s", f.seq, records, f.from.Format(spoolDayFormat), f.to.Format(spoolDayFormat), spoolSuffix)
	tmp := filepath.Join(s.dir, spoolTmpPrefix+f.name)
	if err := os.WriteFile(tmp, stream, 0o600); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, f.name)); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	s.next++
	s.files = append(s.files, f)
	s.size += f.sizeBytes
	s.records.Add(uint64(records))
	return nil
}

// oldest returns the batch that came in first and its COPY stream, or
// false when none waits.
func (s *invocationSpool) oldest() (spoolFile, []byte, bool, error) {
	s.mu.Lock()
	if len(s.files) == 0 {
		s.mu.Unlock()
		return spoolFile{}, nil, false, nil
	}
	f := s.files[0]
	s.mu.Unlock()
	data, err := os.ReadFile(filepath.Join(s.dir, f.name))
	return f, data, true, err
}

// removeOldest forgets the oldest batch, f, and deletes its file.
func (s *invocationSpool) removeOldest(f spoolFile) error {
	s.mu.Lock()
	s.files = s.files[1:]
	s.size -= f.sizeBytes
	s.records.Add(^uint64(f.records - 1))
	s.mu.Unlock()
	err := os.Remove(filepath.Join(s.dir, f.name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
