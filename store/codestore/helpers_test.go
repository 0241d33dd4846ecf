package codestore_test

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"io/fs"
	"testing"
	"time"
)

// entry is one member of a test zip.
type entry struct {
	name   string
	data   string
	mode   fs.FileMode // 0 means a regular 0644 file
	method uint16
	flags  uint16
}

func file(name, data string) entry { return entry{name: name, data: data} }

// mustZip writes entries with archive/zip, which writes any name and mode
// it is given: hostile archives are ordinary zips with hostile headers.
func mustZip(tb testing.TB, modified time.Time, entries ...entry) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: e.method, Modified: modified, Flags: e.flags}
		if e.mode != 0 {
			h.SetMode(e.mode)
		} else {
			h.SetMode(0o644)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write([]byte(e.data)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// rawEntry is a pre-compressed member whose header sizes are whatever the
// test says, true or not.
type rawEntry struct {
	name        string
	compressed  []byte
	crc         uint32
	claimedSize uint64
}

func mustRawZip(tb testing.TB, entries ...rawEntry) []byte {
	tb.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate, CRC32: e.crc,
			CompressedSize64: uint64(len(e.compressed)), UncompressedSize64: e.claimedSize}
		h.SetMode(0o644)
		w, err := zw.CreateRaw(h)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := w.Write(e.compressed); err != nil {
			tb.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// withAliases rewrites a one-entry zip so that the central directory also
// lists the entry's data under each alias name: the overlapping-entry bomb
// (many names, one compressed kernel) that archive/zip cannot write.
func withAliases(tb testing.TB, z []byte, aliases ...string) []byte {
	tb.Helper()
	const eocdLen = 22
	eocd := z[len(z)-eocdLen:]
	if string(eocd[:4]) != "PK\x05\x06" {
		tb.Fatal("test zip has a comment or zip64 end record")
	}
	cdSize := binary.LittleEndian.Uint32(eocd[12:])
	cdOff := binary.LittleEndian.Uint32(eocd[16:])
	rec := z[cdOff : cdOff+cdSize]
	if binary.LittleEndian.Uint16(eocd[10:]) != 1 {
		tb.Fatal("withAliases needs a one-entry zip")
	}
	nameLen := int(binary.LittleEndian.Uint16(rec[28:]))
	out := append([]byte{}, z[:cdOff+cdSize]...)
	for _, a := range aliases {
		r := append([]byte{}, rec[:46]...)
		binary.LittleEndian.PutUint16(r[28:], uint16(len(a)))
		r = append(r, a...)
		r = append(r, rec[46+nameLen:]...) // extra and comment
		out = append(out, r...)
	}
	end := append([]byte{}, eocd...)
	n := uint16(1 + len(aliases))
	binary.LittleEndian.PutUint16(end[8:], n)
	binary.LittleEndian.PutUint16(end[10:], n)
	binary.LittleEndian.PutUint32(end[12:], uint32(len(out))-cdOff)
	return append(out, end...)
}
