package httpapi_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

func TestUploadCreatesAVersionAndQueuesItsBuild(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("hello")
	z := handlerZip(t, `"hello"`)

	v := c.upload("hello", z).want(202).obj()
	if v["version"] != 1.0 || v["build_status"] != "Queued" || !strings.HasPrefix(v["digest"].(string), "sha256:") || v["active"] != false {
		t.Fatalf("upload answered %v", v)
	}
	if n := f.countJobs("build", c.ns, "function", "hello", "version", "1"); n != 1 {
		t.Fatalf("%d build jobs for version 1, want 1", n)
	}
	if fn := c.do("GET", c.p("/functions/hello"), nil).want(200).obj(); fn["phase"] != "Building" {
		t.Fatalf("function after upload: %v", fn)
	}

	// Identical code and config: no new version, 200 with the same one, no new build.
	again := c.upload("hello", handlerZip(t, `"hello"`)).want(200).obj()
	if again["version"] != 1.0 || again["digest"] != v["digest"] {
		t.Fatalf("identical upload answered %v, want version 1", again)
	}
	if n := f.countJobs("build", c.ns, "function", "hello"); n != 1 {
		t.Fatalf("%d build jobs after an identical upload, want 1", n)
	}

	// Different code: version 2.
	if v2 := c.upload("hello", handlerZip(t, `"bye"`)).want(202).obj(); v2["version"] != 2.0 {
		t.Fatalf("second upload answered %v", v2)
	}
	var vs struct {
		Versions []map[string]any `json:"versions"`
	}
	c.do("GET", c.p("/functions/hello/versions"), nil).want(200).decode(&vs)
	if len(vs.Versions) != 2 || vs.Versions[0]["version"] != 2.0 {
		t.Fatalf("versions %v", vs.Versions)
	}

	// The stored zip is what GET source shows (the generated Dockerfile is not).
	var files []struct {
		Name, Content string
		Binary        bool
	}
	r := c.do("GET", c.p("/functions/hello/source?version=2"), nil).want(200)
	r.decode(&files)
	if len(files) != 1 || files[0].Name != "handler.py" || !strings.Contains(files[0].Content, `return "bye"`) {
		t.Fatalf("source %+v", files)
	}
	if r.header.Get("X-Sless-Version") != "2" {
		t.Fatalf("X-Sless-Version %q", r.header.Get("X-Sless-Version"))
	}

	c.upload("ghost", z).wantError(404, "NOT_FOUND", "", "ghost")
}

func TestUploadRejectsEveryZipAttack(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("target")
	cases := []struct {
		name   string
		zip    func(t *testing.T) []byte
		status int
		code   string
		msg    string
	}{
		{"not a zip", func(t *testing.T) []byte { return []byte("just text") }, 400, "INVALID", "not a valid zip"},
		{"dot-dot", func(t *testing.T) []byte { return mustZip(t, zipEntry{name: "../evil.py", data: "x"}) }, 400, "INVALID", `".."`},
		{"nested dot-dot", func(t *testing.T) []byte { return mustZip(t, zipEntry{name: "a/../../evil.py", data: "x"}) }, 400, "INVALID", `".."`},
		{"absolute path", func(t *testing.T) []byte { return mustZip(t, zipEntry{name: "/etc/passwd", data: "x"}) }, 400, "INVALID", "absolute"},
		{"backslash", func(t *testing.T) []byte { return mustZip(t, zipEntry{name: `..\evil.py`, data: "x"}) }, 400, "INVALID", "backslash"},
		{"drive letter", func(t *testing.T) []byte { return mustZip(t, zipEntry{name: "C:/evil.py", data: "x"}) }, 400, "INVALID", "drive"},
		{"symlink", func(t *testing.T) []byte {
			return mustZip(t, zipEntry{name: "handler.py", data: "/etc/passwd", mode: fs.ModeSymlink | 0o777})
		}, 400, "INVALID", "symbolic link"},
		{"device", func(t *testing.T) []byte {
			return mustZip(t, zipEntry{name: "dev", mode: fs.ModeDevice | 0o644})
		}, 400, "INVALID", "not a regular file"},
		{"newline in name", func(t *testing.T) []byte { return mustZip(t, zipEntry{name: "a\nRUN curl evil", data: "x"}) }, 400, "INVALID", "control"},
		{"Dockerfile", func(t *testing.T) []byte {
			return mustZip(t, zipEntry{name: "handler.py", data: "x"}, zipEntry{name: "Dockerfile", data: "FROM evil"})
		}, 400, "INVALID", "Dockerfile"},
		{"more than 10,000 entries", func(t *testing.T) []byte { return manyEntriesZip(t, 10_001) }, 413, "TOO_LARGE", "entries"},
		{"expands past 256 MiB", func(t *testing.T) []byte { return bombZip(t, 257<<20, 257<<20) }, 413, "TOO_LARGE", "256 MiB"},
		// archive/zip stops at the claimed size, so a lying header costs 1 KiB.
		{"header lies about the size", func(t *testing.T) []byte { return bombZip(t, 4<<20, 1024) }, 400, "INVALID", "does not match its header"},
		{"overlapping entries", func(t *testing.T) []byte { return overlapZip(t, "b.txt", "c.txt", "d.txt") }, 400, "INVALID", "overlapping"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.on(t).upload("target", tc.zip(t)).wantError(tc.status, tc.code, "", tc.msg)
		})
	}
	// Nothing was recorded or queued for any of them.
	var vs struct{ Versions []any }
	c.do("GET", c.p("/functions/target/versions"), nil).want(200).decode(&vs)
	if len(vs.Versions) != 0 || f.countJobs("build", c.ns) != 0 {
		t.Fatalf("rejected uploads left versions %v", vs.Versions)
	}
}

func TestUploadOverTheLimitIs413(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("big")

	// A zip of 32 MiB + 1 byte, with the length declared.
	tooBig := make([]byte, 32<<20+1)
	rand.Read(tooBig)
	c.upload("big", tooBig).wantError(413, "TOO_LARGE", "", "32 MiB")

	// The same streamed without a length (chunked): the limit still holds.
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	w, _ := mw.CreateFormFile("code", "big.zip")
	w.Write(tooBig)
	mw.Close()
	req, _ := http.NewRequest("POST", f.url+c.p("/functions/big/upload"), io.MultiReader(&buf)) // no ContentLength
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+c.token)
	c.send(req).wantError(413, "TOO_LARGE", "", "32 MiB")

	// A declared 1 GiB body is refused before it is read: the server takes
	// far less than the client offers.
	var offered atomic.Int64
	body := &countingZeros{n: 1 << 30, read: &offered}
	req, _ = http.NewRequest("POST", f.url+c.p("/functions/big/upload"), body)
	req.ContentLength = 1 << 30
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		msg, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 413 || !strings.Contains(string(msg), "TOO_LARGE") {
			t.Fatalf("1 GiB upload: %d %s", res.StatusCode, msg)
		}
	} // else: the server closed the connection mid-body, which is also a refusal
	if n := offered.Load(); n > 64<<20 {
		t.Fatalf("the client sent %d MiB before the server refused", n>>20)
	}

	// Exactly at the limit is fine as far as size goes (it is not a zip).
	atLimit := tooBig[:32<<20]
	c.upload("big", atLimit).wantError(400, "INVALID", "", "not a valid zip")

	// A multipart body without the code field, and a non-multipart body.
	var empty bytes.Buffer
	mw = multipart.NewWriter(&empty)
	mw.WriteField("other", "x")
	mw.Close()
	req, _ = http.NewRequest("POST", f.url+c.p("/functions/big/upload"), &empty)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+c.token)
	c.send(req).wantError(400, "INVALID", "code", "required")
	c.do("POST", c.p("/functions/big/upload"), `{"code": "x"}`).wantError(400, "INVALID", "code", "multipart")
}

// countingZeros is an endless-looking body that counts what is read from it.
type countingZeros struct {
	n    int64
	read *atomic.Int64
}

func (z *countingZeros) Read(p []byte) (int, error) {
	left := z.n - z.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), left))
	clear(p[:n])
	z.read.Add(int64(n))
	return n, nil
}

func TestSourceOfTheActiveVersion(t *testing.T) {
	t.Parallel()
	f := setup(t)
	c := f.tenant()
	c.createFunction("src")
	c.do("GET", c.p("/functions/src/source"), nil).wantError(404, "NOT_FOUND", "", "no code")

	binary := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}
	z1 := mustZip(t, zipEntry{name: "handler.py", data: "def handle(e):\n    return 1\n"},
		zipEntry{name: "lib/util.py", data: "X = 1\n"}, zipEntry{name: "logo.png", data: string(binary)})
	c.upload("src", z1).want(202)
	// Nothing active yet: the newest version is shown.
	var files []struct {
		Name    string `json:"name"`
		Content string `json:"content"`
		Binary  bool   `json:"binary"`
	}
	c.do("GET", c.p("/functions/src/source"), nil).want(200).decode(&files)
	if len(files) != 3 || files[0].Name != "handler.py" || files[1].Name != "lib/util.py" || files[2].Name != "logo.png" {
		t.Fatalf("files %+v", files)
	}
	if files[0].Binary || !files[2].Binary || files[2].Content != base64.StdEncoding.EncodeToString(binary) {
		t.Fatalf("binary handling: %+v", files)
	}

	f.build(c.ns, "src", 1, "")
	c.upload("src", handlerZip(t, "2")).want(202) // version 2, not built: 1 stays active
	r := c.do("GET", c.p("/functions/src/source"), nil).want(200)
	if r.header.Get("X-Sless-Version") != "1" {
		t.Fatalf("source of version %s, want the active 1", r.header.Get("X-Sless-Version"))
	}
	c.do("GET", c.p("/functions/src/source?version=2"), nil).want(200).decode(&files)
	if len(files) != 1 || !strings.Contains(files[0].Content, "return 2") {
		t.Fatalf("version 2 files %+v", files)
	}
	c.do("GET", c.p("/functions/src/source?version=7"), nil).wantError(404, "NOT_FOUND", "")
	c.do("GET", c.p("/functions/src/source?version=x"), nil).wantError(400, "INVALID", "version")
}
