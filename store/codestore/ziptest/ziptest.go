// Package ziptest builds zip archives for tests: the code a client uploads,
// and the raw deflate streams that zip-bomb tests need. It imports only the
// standard library, so every test package (codestore's own included) can use it.
package ziptest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"testing"
	"time"
)

// Modified is the fixed modification time of every entry Files writes, so the
// same files always give the same bytes.
var Modified = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Files zips files (name → content) in name order, deflated, as a client would.
func Files(tb testing.TB, files map[string]string) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: Modified})
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := io.WriteString(w, files[name]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// DeflatedZeros returns a raw deflate stream of n zero bytes and their CRC-32,
// built in 1 MiB steps so that the test itself stays small in memory.
func DeflatedZeros(tb testing.TB, n int64) ([]byte, uint32) {
	tb.Helper()
	var buf bytes.Buffer
	fw, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		tb.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	crc := crc32.NewIEEE()
	for left := n; left > 0; {
		k := min(left, int64(len(zeros)))
		fw.Write(zeros[:k])
		crc.Write(zeros[:k])
		left -= k
	}
	if err := fw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes(), crc.Sum32()
}
