package ziptest

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io"
	"testing"
)

func TestFilesIsDeterministicAndReadable(t *testing.T) {
	files := map[string]string{"b.py": "B", "a/c.js": "C"}
	a, b := Files(t, files), Files(t, files)
	if !bytes.Equal(a, b) {
		t.Fatal("the same files gave different archives")
	}
	zr, err := zip.NewReader(bytes.NewReader(a), int64(len(a)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) != 2 || zr.File[0].Name != "a/c.js" || zr.File[1].Name != "b.py" {
		t.Fatalf("entries %v, want a/c.js then b.py", zr.File)
	}
	rc, _ := zr.File[1].Open()
	got, _ := io.ReadAll(rc)
	if string(got) != "B" {
		t.Fatalf("b.py = %q", got)
	}
}

func TestDeflatedZeros(t *testing.T) {
	const n = 3<<20 + 5
	raw, crc := DeflatedZeros(t, n)
	out, err := io.ReadAll(flate.NewReader(bytes.NewReader(raw)))
	if err != nil || len(out) != n || crc32.ChecksumIEEE(out) != crc || bytes.Count(out, []byte{0}) != n {
		t.Fatalf("inflated %d bytes (err %v), crc match %v; want %d zero bytes", len(out), err, crc32.ChecksumIEEE(out) == crc, n)
	}
}
