package codestore_test

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"fmt"
	"io/fs"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store/codestore"
	"github.com/slessio/sless/store/codestore/ziptest"
)

var t0 = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)

func TestValidateZipAcceptsOrdinaryCode(t *testing.T) {
	t.Parallel()
	z := mustZip(t, t0,
		entry{name: "lib/", mode: fs.ModeDir | 0o755},
		file("handler.py", "def handle(event):\n    return event\n"),
		file("./lib/util.py", "X = 1\n"),
		entry{name: "bin/run.sh", data: "#!/bin/sh\n", mode: 0o755, method: zip.Deflate},
		file("sub/Dockerfile", "only the root Dockerfile is the platform's"),
		file("empty.txt", ""),
	)
	files, err := codestore.ValidateZip(z, codestore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, fmt.Sprintf("%s %o %q", f.Name, f.Mode, f.Data))
	}
	want := []string{
		`bin/run.sh 755 "#!/bin/sh\n"`,
		`empty.txt 644 ""`,
		`handler.py 644 "def handle(event):\n    return event\n"`,
		`lib/util.py 644 "X = 1\n"`,
		`sub/Dockerfile 644 "only the root Dockerfile is the platform's"`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("files:\n got %q\nwant %q", got, want)
	}
}

func TestValidateZipRejectsHostileNamesAndTypes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		entries []entry
		code    string
		mention string
	}{
		{"parent dir", []entry{file("../x", "x")}, domain.EINVALID, `"../x"`},
		{"absolute", []entry{file("/etc/x", "x")}, domain.EINVALID, `"/etc/x"`},
		{"parent dir inside", []entry{file("a/../../x", "x")}, domain.EINVALID, `"a/../../x"`},
		{"parent dir that cleans away", []entry{file("a/../b", "x")}, domain.EINVALID, `".."`},
		{"backslash traversal", []entry{file(`..\x`, "x")}, domain.EINVALID, `"..\\x"`},
		{"drive letter", []entry{file(`C:\x`, "x")}, domain.EINVALID, `"C:\\x"`},
		{"drive letter with slash", []entry{file(`C:/x`, "x")}, domain.EINVALID, "drive letter"},
		{"symlink", []entry{{name: "link", data: "/etc/passwd", mode: fs.ModeSymlink | 0o777}}, domain.EINVALID, "symbolic link"},
		{"symlink dir then file through it", []entry{{name: "d", data: "/etc", mode: fs.ModeSymlink | 0o777}, file("d/passwd", "x")}, domain.EINVALID, "symbolic link"},
		{"named pipe", []entry{{name: "fifo", mode: fs.ModeNamedPipe | 0o644}}, domain.EINVALID, "not a regular file"},
		{"device", []entry{{name: "dev", mode: fs.ModeDevice | 0o644}}, domain.EINVALID, "not a regular file"},
		{"newline in name", []entry{file("a\nRUN curl evil", "x")}, domain.EINVALID, `"a\nRUN curl evil"`},
		{"control char", []entry{file("a\x1b[31m", "x")}, domain.EINVALID, "control"},
		{"unicode line separator", []entry{file("a\u2028b", "x")}, domain.EINVALID, "line-break"},
		{"invalid utf-8", []entry{file("a\xff", "x")}, domain.EINVALID, "UTF-8"},
		{"empty name", []entry{file("", "x")}, domain.EINVALID, "empty name"},
		{"dockerfile", []entry{file("Dockerfile", "FROM evil")}, domain.EINVALID, "generates the Dockerfile"},
		{"dockerfile lower case", []entry{file("./dockerfile", "FROM evil")}, domain.EINVALID, "generates the Dockerfile"},
		{"duplicate after cleaning", []entry{file("a/b", "1"), file("./a//b", "2")}, domain.EINVALID, `"a/b"`},
		{"duplicate", []entry{file("a", "1"), file("a", "2")}, domain.EINVALID, "same file"},
		{"file then dir of same name", []entry{file("a", "1"), file("a/b", "2")}, domain.EINVALID, "as a directory"},
		{"dir entry then file of same name", []entry{{name: "a/", mode: fs.ModeDir | 0o755}, file("a", "1")}, domain.EINVALID, "as a directory"},
		{"encrypted", []entry{{name: "secret", data: "x", flags: 0x1}}, domain.EINVALID, "encrypted"},
		{"long component", []entry{file(string(bytes.Repeat([]byte("a"), 256)), "x")}, domain.EINVALID, "255"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := codestore.ValidateZip(mustZip(t, t0, tc.entries...), codestore.Limits{})
			testutil.RequireCode(t, err, tc.code, tc.mention)
		})
	}
}

func TestValidateZipRejectsNonZipsAndCorruptEntries(t *testing.T) {
	t.Parallel()
	random := make([]byte, 4096)
	_, _ = rand.Read(random)
	for name, data := range map[string][]byte{"empty": nil, "random": random, "text": []byte("PK but not really")} {
		_, err := codestore.ValidateZip(data, codestore.Limits{})
		testutil.RequireCode(t, err, domain.EINVALID, "not a valid zip")
		_ = name
	}

	// A stored entry whose bytes were flipped after zipping: the CRC catches it.
	z := mustZip(t, t0, file("a.txt", "hello, world"))
	i := bytes.Index(z, []byte("hello, world"))
	z[i] ^= 0x20
	_, err := codestore.ValidateZip(z, codestore.Limits{})
	testutil.RequireCode(t, err, domain.EINVALID, `"a.txt"`, "corrupt")

	// An unknown compression method.
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.CreateRaw(&zip.FileHeader{Name: "x", Method: 99, CompressedSize64: 1, UncompressedSize64: 1})
	w.Write([]byte("x"))
	zw.Close()
	_, err = codestore.ValidateZip(buf.Bytes(), codestore.Limits{})
	testutil.RequireCode(t, err, domain.EINVALID, "unsupported compression method")
}

// A header that claims 1 KiB over a stream that inflates to 64 MiB: rejected
// as soon as the 1 KiB is exceeded, not after inflating the rest.
func TestValidateZipRejectsHeaderUnderstatingSize(t *testing.T) {
	t.Parallel()
	comp, crc := ziptest.DeflatedZeros(t, 64<<20)
	z := mustRawZip(t, rawEntry{name: "bomb.bin", compressed: comp, crc: crc, claimedSize: 1024})
	start := time.Now()
	_, err := codestore.ValidateZip(z, codestore.Limits{})
	testutil.RequireCode(t, err, domain.EINVALID, `"bomb.bin"`, "does not match its header")
	t.Logf("rejected in %v", time.Since(start))
}

func TestValidateZipRejectsOverlappingEntries(t *testing.T) {
	t.Parallel()
	comp, crc := ziptest.DeflatedZeros(t, 1<<20)
	z := withAliases(t, mustRawZip(t, rawEntry{name: "k0", compressed: comp, crc: crc, claimedSize: 1 << 20}), "k1", "k2")
	_, err := codestore.ValidateZip(z, codestore.Limits{})
	testutil.RequireCode(t, err, domain.EINVALID, "share compressed data")
}

func TestValidateZipEntryCap(t *testing.T) {
	t.Parallel()
	many := make([]entry, 10_001)
	for i := range many {
		many[i] = file("f"+strconv.Itoa(i), "")
	}
	_, err := codestore.ValidateZip(mustZip(t, t0, many...), codestore.Limits{})
	testutil.RequireCode(t, err, domain.ETOOLARGE, "10001 entries", "10000")

	if _, err := codestore.ValidateZip(mustZip(t, t0, many[:10_000]...), codestore.Limits{}); err != nil {
		t.Fatalf("10,000 entries: %v", err)
	}
	_, err = codestore.ValidateZip(mustZip(t, t0, many[:11]...), codestore.Limits{MaxEntries: 10})
	testutil.RequireCode(t, err, domain.ETOOLARGE)
}

// peakHeap runs f while sampling HeapInuse and returns the highest value seen.
// Callers do not run in parallel, so the heap is theirs.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var peak atomic.Uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peak.Load() {
			peak.Store(ms.HeapInuse)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				sample()
			}
		}
	}()
	f()
	sample()
	close(stop)
	wg.Wait()
	return peak.Load()
}

const heapCeiling = 128 << 20

// The bombs below expand past 256 MiB; memory must stay flat while the
// validator counts. Not parallel: HeapInuse is process-wide.
func TestValidateZipByteCapWithBoundedMemory(t *testing.T) {
	comp300, crc300 := ziptest.DeflatedZeros(t, 300<<20)
	comp100, crc100 := ziptest.DeflatedZeros(t, 100<<20)
	cases := []struct {
		name string
		zip  []byte
	}{
		// The header claims 1 TiB: nothing in it is used as a size.
		{"one entry overstating its size", mustRawZip(t, rawEntry{name: "big", compressed: comp300, crc: crc300, claimedSize: 1 << 40})},
		{"one honest 300 MiB entry", mustRawZip(t, rawEntry{name: "big", compressed: comp300, crc: crc300, claimedSize: 300 << 20})},
		{"three honest 100 MiB entries", mustRawZip(t,
			rawEntry{name: "a", compressed: comp100, crc: crc100, claimedSize: 100 << 20},
			rawEntry{name: "b", compressed: comp100, crc: crc100, claimedSize: 100 << 20},
			rawEntry{name: "c", compressed: comp100, crc: crc100, claimedSize: 100 << 20})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			peak := peakHeap(func() { _, err = codestore.ValidateZip(tc.zip, codestore.Limits{}) })
			testutil.RequireCode(t, err, domain.ETOOLARGE, "256 MiB")
			t.Logf("zip %d KiB, peak HeapInuse %d MiB", len(tc.zip)>>10, peak>>20)
			if peak > heapCeiling {
				t.Fatalf("peak HeapInuse %d MiB, want under %d MiB", peak>>20, heapCeiling>>20)
			}
		})
	}

	t.Run("just under the cap is accepted", func(t *testing.T) {
		comp, crc := ziptest.DeflatedZeros(t, 8<<20)
		z := mustRawZip(t, rawEntry{name: "ok", compressed: comp, crc: crc, claimedSize: 8 << 20})
		if _, err := codestore.ValidateZip(z, codestore.Limits{MaxBytes: 8 << 20}); err != nil {
			t.Fatalf("8 MiB with an 8 MiB cap: %v", err)
		}
		_, err := codestore.ValidateZip(z, codestore.Limits{MaxBytes: 8<<20 - 1})
		testutil.RequireCode(t, err, domain.ETOOLARGE)
	})
}

// 200,000 empty entries (a 20 MiB zip): refused before archive/zip builds
// 200,000 headers in memory.
func TestValidateZipManyEntriesWithBoundedMemory(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range 200_000 {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: strconv.Itoa(i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	z := buf.Bytes()
	buf = bytes.Buffer{}
	var err error
	peak := peakHeap(func() { _, err = codestore.ValidateZip(z, codestore.Limits{}) })
	testutil.RequireCode(t, err, domain.ETOOLARGE, "entries")
	t.Logf("zip %d MiB, peak HeapInuse %d MiB", len(z)>>20, peak>>20)
	if peak > heapCeiling {
		t.Fatalf("peak HeapInuse %d MiB, want under %d MiB", peak>>20, heapCeiling>>20)
	}
}

func TestDigestIgnoresArchiveDetails(t *testing.T) {
	t.Parallel()
	a := mustZip(t, t0, file("handler.py", "print(1)\n"), file("lib/x.py", "X=1\n"))
	b := mustZip(t, t0.Add(90*24*time.Hour),
		entry{name: "lib/", mode: fs.ModeDir | 0o755},
		entry{name: "lib/x.py", data: "X=1\n", method: zip.Deflate},
		entry{name: "./handler.py", data: "print(1)\n", method: zip.Store},
	)
	if bytes.Equal(a, b) {
		t.Fatal("test zips are identical")
	}
	da := digestOf(t, a)
	if db := digestOf(t, b); da != db {
		t.Fatalf("same code, different digests: %s vs %s", da, db)
	}
	if len(da) != len("sha256:")+64 || da[:7] != "sha256:" {
		t.Fatalf("digest %q is not sha256:<hex>", da)
	}
	for name, other := range map[string][]byte{
		"content":   mustZip(t, t0, file("handler.py", "print(2)\n"), file("lib/x.py", "X=1\n")),
		"name":      mustZip(t, t0, file("handler2.py", "print(1)\n"), file("lib/x.py", "X=1\n")),
		"exec bit":  mustZip(t, t0, entry{name: "handler.py", data: "print(1)\n", mode: 0o755}, file("lib/x.py", "X=1\n")),
		"boundary":  mustZip(t, t0, file("handler.py", "print(1)\nX=1\n"), file("lib/x.py", "")),
		"file less": mustZip(t, t0, file("handler.py", "print(1)\n")),
	} {
		if digestOf(t, other) == da {
			t.Errorf("a change of %s keeps the digest", name)
		}
	}
}

func digestOf(t *testing.T, z []byte) string {
	t.Helper()
	files, err := codestore.ValidateZip(z, codestore.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return codestore.Digest(files)
}
