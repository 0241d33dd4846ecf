package proxy

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
)

// spoolMemory is how much of a chunked body a spool keeps in memory; the
// rest goes to an unlinked temporary file, so a request holds at most this
// much of the proxy's memory whatever the body limit.
const spoolMemory = 256 << 10

// spoolBuffers recycles the in-memory part of spools.
var spoolBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// errBodyTooLarge says a chunked body went over the limit while spooled.
var errBodyTooLarge = errors.New("request body over the limit")

// spool is a request body read whole before the function sees any of it: a
// body of unknown length (chunked) can only be checked against the limit by
// reading it to its end, and the function must never receive a cut one
// (nginx's proxy_request_buffering does the same).
type spool struct {
	mem  *bytes.Buffer
	file *os.File
	r    io.Reader
	n    int64
}

// spoolBody reads body up to limit bytes; errBodyTooLarge (with the bytes
// read, limit+1) when there is more, any other error when reading failed.
// The returned spool must be closed.
func spoolBody(body io.Reader, limit int64) (*spool, error) {
	s := &spool{mem: spoolBuffers.Get().(*bytes.Buffer)}
	s.mem.Reset()
	lr := &io.LimitedReader{R: body, N: limit + 1}
	n, err := io.CopyN(s.mem, lr, spoolMemory)
	s.n = n
	if err == nil { // more than fits in memory: the rest to a file
		if s.file, err = os.CreateTemp("", "sless-body-*"); err != nil {
			s.Close()
			return nil, err
		}
		_ = os.Remove(s.file.Name()) // unlinked: gone with the last descriptor
		m, err := io.Copy(s.file, lr)
		s.n += m
		if err != nil {
			s.Close()
			return nil, err
		}
		if _, err := s.file.Seek(0, io.SeekStart); err != nil {
			s.Close()
			return nil, err
		}
	} else if err != io.EOF {
		s.Close()
		return nil, err
	}
	if s.n > limit {
		return s, errBodyTooLarge
	}
	s.r = s.mem
	if s.file != nil {
		s.r = io.MultiReader(s.mem, s.file)
	}
	return s, nil
}

func (s *spool) Read(p []byte) (int, error) { return s.r.Read(p) }

// Close releases the file and the buffer; it is safe to call twice.
func (s *spool) Close() error {
	if s.file != nil {
		s.file.Close()
		s.file = nil
	}
	if s.mem != nil {
		if s.mem.Cap() <= 2*spoolMemory {
			spoolBuffers.Put(s.mem)
		}
		s.mem = nil
		s.r = bytes.NewReader(nil)
	}
	return nil
}

// chunked reports whether r has a body of unknown length.
func chunked(r *http.Request) bool {
	return r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody
}
