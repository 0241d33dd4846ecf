package codestore_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/store/codestore"
)

type tarEntry struct {
	name  string
	kind  byte
	mode  int64
	mtime time.Time
	uid   int
	data  string
}

func untar(t *testing.T, tgz []byte) (*gzip.Header, []tarEntry) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		out = append(out, tarEntry{h.Name, h.Typeflag, h.Mode, h.ModTime, h.Uid, string(data)})
	}
	return &gz.Header, out
}

func TestBuildContextIsDeterministic(t *testing.T) {
	t.Parallel()
	files := []codestore.File{
		{Name: "lib/deep/x.py", Mode: 0o644, Data: []byte("X=1\n")},
		{Name: "handler.py", Mode: 0o644, Data: []byte("def handle(e): return e\n")},
		{Name: "run.sh", Mode: 0o700, Data: []byte("#!/bin/sh\n")},
	}
	a, err := codestore.BuildContext(files, "sless/python:3.11")
	if err != nil {
		t.Fatal(err)
	}
	reversed := slices.Clone(files)
	slices.Reverse(reversed)
	b, err := codestore.BuildContext(reversed, "sless/python:3.11")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the same files in another order give different bytes")
	}

	hdr, entries := untar(t, a)
	if !hdr.ModTime.IsZero() || hdr.Name != "" {
		t.Errorf("gzip header carries name %q / time %v", hdr.Name, hdr.ModTime)
	}
	var got []string
	for _, e := range entries {
		if !e.mtime.Equal(time.Unix(0, 0)) || e.uid != 0 {
			t.Errorf("%s: mtime %v uid %d", e.name, e.mtime, e.uid)
		}
		got = append(got, fmt.Sprintf("%s %c %o %q", e.name, e.kind, e.mode, e.data))
	}
	want := []string{
		`./ 5 755 ""`,
		`Dockerfile 0 644 "FROM sless/python:3.11\nCOPY . /app/function/\n"`,
		`handler.py 0 644 "def handle(e): return e\n"`,
		`lib/ 5 755 ""`,
		`lib/deep/ 5 755 ""`,
		`lib/deep/x.py 0 644 "X=1\n"`,
		`run.sh 0 755 "#!/bin/sh\n"`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("entries:\n got %q\nwant %q", got, want)
	}

	c, _ := codestore.BuildContext(files, "sless/python:3.12")
	if bytes.Equal(a, c) {
		t.Error("another base image gives the same context")
	}
}

func TestBuildContextRefusesBadInput(t *testing.T) {
	t.Parallel()
	ok := []codestore.File{{Name: "a.py", Mode: 0o644}}
	for _, img := range []string{"", "python:3.11\nRUN curl evil", "python 3.11", "img\x00"} {
		_, err := codestore.BuildContext(ok, img)
		testutil.RequireCode(t, err, domain.EINVALID, "base image")
	}
	for name, files := range map[string][]codestore.File{
		"dockerfile":  {{Name: "Dockerfile"}},
		"traversal":   {{Name: "../x"}},
		"unclean":     {{Name: "./a"}},
		"newline":     {{Name: "a\nRUN x"}},
		"duplicate":   {{Name: "a"}, {Name: "a"}},
		"file as dir": {{Name: "a"}, {Name: "a/b"}},
	} {
		if _, err := codestore.BuildContext(files, "img"); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("%s: err %v, want EINVALID", name, err)
		}
	}
}
