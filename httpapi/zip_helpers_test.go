package httpapi_test

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io/fs"
	"testing"
	"time"

	"github.com/slessio/sless/store/codestore/ziptest"
)

// zipEntry is one member of a test zip; hostile archives are ordinary zips
// with hostile headers, which archive/zip writes as told.
type zipEntry struct {
	name string
	data string
	mode fs.FileMode // 0: a regular 0644 file
}

var zipTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func mustZip(t testing.TB, entries ...zipEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, Modified: zipTime}
		h.SetMode(0o644)
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(e.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// handlerZip is a small valid Python function; body varies the code.
func handlerZip(t testing.TB, body string) []byte {
	return mustZip(t, zipEntry{name: "handler.py", data: "def handle(event):\n    return " + body + "\n"})
}

// bombZip is one deflate entry of n zero bytes whose header claims claimed bytes.
func bombZip(t *testing.T, n int64, claimed uint64) []byte {
	t.Helper()
	comp, crc := ziptest.DeflatedZeros(t, n)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	h := &zip.FileHeader{Name: "zeros.bin", Method: zip.Deflate, CRC32: crc,
		CompressedSize64: uint64(len(comp)), UncompressedSize64: claimed}
	h.SetMode(0o644)
	w, err := zw.CreateRaw(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(comp)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// overlapZip lists the data of a one-entry zip under more names in the
// central directory: the overlapping-entry bomb archive/zip cannot write.
func overlapZip(t *testing.T, aliases ...string) []byte {
	t.Helper()
	z := mustZip(t, zipEntry{name: "kernel.txt", data: string(bytes.Repeat([]byte("A"), 4096))})
	const eocdLen = 22
	eocd := z[len(z)-eocdLen:]
	cdSize := binary.LittleEndian.Uint32(eocd[12:])
	cdOff := binary.LittleEndian.Uint32(eocd[16:])
	rec := z[cdOff : cdOff+cdSize]
	nameLen := int(binary.LittleEndian.Uint16(rec[28:]))
	out := append([]byte{}, z[:cdOff+cdSize]...)
	for _, a := range aliases {
		r := append([]byte{}, rec[:46]...)
		binary.LittleEndian.PutUint16(r[28:], uint16(len(a)))
		r = append(r, a...)
		r = append(r, rec[46+nameLen:]...)
		out = append(out, r...)
	}
	end := append([]byte{}, eocd...)
	count := uint16(1 + len(aliases))
	binary.LittleEndian.PutUint16(end[8:], count)
	binary.LittleEndian.PutUint16(end[10:], count)
	binary.LittleEndian.PutUint32(end[12:], uint32(len(out))-cdOff)
	return append(out, end...)
}

// manyEntriesZip has n empty files.
func manyEntriesZip(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		h := &zip.FileHeader{Name: "f" + itoa6(i), Method: zip.Store}
		h.SetMode(0o644)
		if _, err := zw.CreateHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func itoa6(i int) string {
	b := []byte("000000")
	for j := 5; j >= 0 && i > 0; j-- {
		b[j] = byte('0' + i%10)
		i /= 10
	}
	return string(b)
}
