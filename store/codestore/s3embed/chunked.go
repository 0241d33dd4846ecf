package s3embed

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"hash"
	"hash/crc32"
	"io"
	"strconv"
	"strings"

	"github.com/minio/crc64nvme"
)

const (
	// maxChunk bounds one aws-chunked chunk, which is buffered until its
	// signature is checked (clients send 64 KiB; AWS documents no limit).
	maxChunk = 16 << 20
	// maxTrailer bounds the trailing headers after the last chunk.
	maxTrailer = 64 << 10
)

// chunkedReader decodes an aws-chunked body (the framing minio-go and the AWS
// SDKs use for streaming uploads) into the object's bytes. With a signature,
// each chunk is released only after its chained signature matched, so
// gofakes3 never sees a byte the client did not sign. Framing:
//
//	signed:   <hex size>;chunk-signature=<sig>\r\n<data>\r\n ... 0;chunk-signature=<sig>\r\n
//	unsigned: <hex size>\r\n<data>\r\n ... 0\r\n
//
// then "\r\n", or trailing headers (x-amz-checksum-*, x-amz-trailer-signature).
type chunkedReader struct {
	src     *bufio.Reader
	sig     *signature // checks chunk signatures when non-nil
	signed  bool       // chunk headers carry chunk-signature
	trailer bool       // trailing headers follow the last chunk
	prev    string     // previous signature in the chain
	want    int64      // x-amz-decoded-content-length
	got     int64
	sum     *checksum // checksum announced in X-Amz-Trailer, if any

	buf []byte
	off int
	err error
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	for c.off == len(c.buf) {
		if c.err != nil {
			return 0, c.err
		}
		c.err = c.next()
	}
	n := copy(p, c.buf[c.off:])
	c.off += n
	return n, nil
}

// next loads and checks one chunk; after the last one it checks the trailer
// and returns io.EOF.
func (c *chunkedReader) next() error {
	line, err := c.src.ReadSlice('\n')
	if err != nil {
		return errIncompleteBody("aws-chunked body ended before its last chunk")
	}
	header := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
	sizeHex, ext, _ := strings.Cut(header, ";")
	size, err := strconv.ParseInt(sizeHex, 16, 64)
	if err != nil || size < 0 || size > maxChunk {
		return errBadBody("malformed aws-chunked chunk header")
	}
	var chunkSig string
	if c.signed {
		for _, e := range strings.Split(ext, ";") {
			if v, ok := strings.CutPrefix(e, "chunk-signature="); ok {
				chunkSig = v
			}
		}
		if chunkSig == "" {
			return errBadBody("aws-chunked chunk without chunk-signature")
		}
	}
	if c.got+size > c.want {
		return errBadBody("aws-chunked body is longer than x-amz-decoded-content-length")
	}
	if cap(c.buf) < int(size) {
		c.buf = make([]byte, size)
	}
	c.buf, c.off = c.buf[:size], 0
	if _, err := io.ReadFull(c.src, c.buf); err != nil {
		return errIncompleteBody("aws-chunked chunk is shorter than its header says")
	}
	if size > 0 {
		if crlf, err := c.src.Peek(2); err != nil || string(crlf) != "\r\n" {
			return errBadBody("aws-chunked chunk is not followed by CRLF")
		}
		_, _ = c.src.Discard(2)
	}
	if c.sig != nil && c.signed {
		h := sha256.Sum256(c.buf)
		if want := c.sig.chunkSignature(c.prev, h[:]); !hmac.Equal([]byte(want), []byte(chunkSig)) {
			c.buf = c.buf[:0]
			return errBadBody("aws-chunked chunk signature does not match")
		}
		c.prev = chunkSig
	}
	if c.sum != nil {
		c.sum.h.Write(c.buf)
	}
	c.got += size
	if size == 0 {
		return c.finish()
	}
	return nil
}

// finish reads what follows the zero-length chunk and checks the totals.
func (c *chunkedReader) finish() error {
	rest, err := io.ReadAll(io.LimitReader(c.src, maxTrailer+1))
	if err != nil || len(rest) > maxTrailer {
		return errBadBody("aws-chunked trailer is unreadable or too long")
	}
	if c.got != c.want {
		return errIncompleteBody("aws-chunked body is shorter than x-amz-decoded-content-length")
	}
	if !c.trailer {
		if s := string(rest); s != "\r\n" && s != "" {
			return errBadBody("unexpected bytes after the last aws-chunked chunk")
		}
		return io.EOF
	}
	// Trailing headers end in "\n" (minio-go) or "\r\n" (AWS SDKs), with
	// blank lines between; the signature covers "name:value\n" per header.
	var canonical bytes.Buffer
	var trailerSig string
	values := map[string]string{}
	for _, l := range strings.Split(string(rest), "\n") {
		l = strings.TrimSuffix(l, "\r")
		if l == "" {
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return errBadBody("malformed aws-chunked trailing header")
		}
		k = strings.ToLower(strings.TrimSpace(k))
		if k == "x-amz-trailer-signature" {
			trailerSig = strings.TrimSpace(v)
			continue
		}
		values[k] = strings.TrimSpace(v)
		canonical.WriteString(k + ":" + strings.TrimSpace(v) + "\n")
	}
	if c.sig != nil && c.signed {
		h := sha256.Sum256(canonical.Bytes())
		if want := c.sig.trailerSignature(c.prev, h[:]); !hmac.Equal([]byte(want), []byte(trailerSig)) {
			return errBadBody("aws-chunked trailer signature does not match")
		}
	}
	if c.sum != nil {
		if err := c.sum.verify(values[c.sum.name]); err != nil {
			return err
		}
	}
	return io.EOF
}

// checksum is an x-amz-checksum-<algorithm> the client sent (as a header or a
// trailing header) over the decoded body.
type checksum struct {
	name string // lower-case header name, e.g. x-amz-checksum-crc32c
	h    hash.Hash
}

// newChecksum returns a checksum for a supported header name, or nil for
// names that are no body checksum (x-amz-checksum-algorithm, -type, -mode)
// or algorithms this server does not compute.
func newChecksum(name string) *checksum {
	name = strings.ToLower(strings.TrimSpace(name))
	var h hash.Hash
	switch strings.TrimPrefix(name, "x-amz-checksum-") {
	case "crc32":
		h = crc32.NewIEEE()
	case "crc32c":
		h = crc32.New(crc32.MakeTable(crc32.Castagnoli))
	case "crc64nvme":
		h = crc64nvme.New()
	case "sha1":
		h = sha1.New()
	case "sha256":
		h = sha256.New()
	default:
		return nil
	}
	return &checksum{name: name, h: h}
}

func (c *checksum) verify(want string) error {
	if want == "" {
		return errBadBody(c.name + " was announced but not sent")
	}
	if got := base64.StdEncoding.EncodeToString(c.h.Sum(nil)); got != want {
		return errBadBody(c.name + " does not match the body")
	}
	return nil
}

// verifyingReader checks a plain body against the sha256 the client signed
// (x-amz-content-sha256) and any x-amz-checksum-* header, at EOF. The file
// backend commits only bodies that reach EOF cleanly.
type verifyingReader struct {
	r       io.Reader
	sha     hash.Hash // nil when the payload is UNSIGNED-PAYLOAD
	wantSHA string
	sums    []checksumWant
	err     error
}

type checksumWant struct {
	*checksum
	want string
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.r.Read(p)
	if v.sha != nil {
		v.sha.Write(p[:n])
	}
	for _, s := range v.sums {
		s.h.Write(p[:n])
	}
	if err == io.EOF {
		if v.sha != nil && hex.EncodeToString(v.sha.Sum(nil)) != v.wantSHA {
			err = gofakes3BadDigestSHA
		}
		for _, s := range v.sums {
			if verr := s.verify(s.want); verr != nil && err == io.EOF {
				err = verr
			}
		}
	}
	v.err = err
	return n, err
}

var gofakes3BadDigestSHA = errBadBody("x-amz-content-sha256 does not match the body")
