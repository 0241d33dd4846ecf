package codestore_test

import (
	"archive/zip"
	"crypto/rand"
	"fmt"
	"testing"

	"github.com/slessio/sless/store/codestore"
)

// typicalZip is 300 source files of 4 KiB text plus a 2 MiB binary blob.
func typicalZip(b *testing.B) []byte {
	b.Helper()
	entries := make([]entry, 0, 301)
	text := make([]byte, 4096)
	for i := range text {
		text[i] = "abcdefghij\n"[i%11]
	}
	for i := range 300 {
		entries = append(entries, entry{name: fmt.Sprintf("pkg%02d/mod%03d.py", i%20, i), data: string(text), method: zip.Deflate})
	}
	blob := make([]byte, 2<<20)
	_, _ = rand.Read(blob)
	entries = append(entries, entry{name: "model.bin", data: string(blob), method: zip.Deflate})
	return mustZip(b, t0, entries...)
}

// BenchmarkUploadPipeline measures what an upload costs before the network:
// ValidateZip, Digest and BuildContext.
func BenchmarkUploadPipeline(b *testing.B) {
	z := typicalZip(b)
	b.SetBytes(int64(len(z)))
	for b.Loop() {
		files, err := codestore.ValidateZip(z, codestore.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		_ = codestore.Digest(files)
		if _, err := codestore.BuildContext(files, "sless/python:3.11"); err != nil {
			b.Fatal(err)
		}
	}
}
