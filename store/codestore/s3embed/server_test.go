package s3embed_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/slessio/sless/store/codestore/s3embed"
)

const (
	testAccess = "sless-test"
	testSecret = "sless-test-secret-key"
	testBucket = "code"
)

// setup starts a server with credentials and one bucket, and returns it with
// a minio client using default options.
func setup(t *testing.T) (*s3embed.Server, *minio.Client) {
	t.Helper()
	srv := mustStart(t, optsFor(t))
	return srv, mustClient(t, srv.Endpoint(), testAccess, testSecret, nil)
}

func optsFor(tb testing.TB) s3embed.Options {
	return s3embed.Options{Dir: tb.TempDir(), AccessKey: testAccess, SecretKey: testSecret, Buckets: []string{testBucket}}
}

func mustStart(tb testing.TB, opts s3embed.Options) *s3embed.Server {
	tb.Helper()
	srv, err := s3embed.Start(tb.Context(), opts)
	if err != nil {
		tb.Fatalf("start: %v", err)
	}
	tb.Cleanup(func() { _ = srv.Close() })
	return srv
}

func mustClient(tb testing.TB, endpoint, access, secret string, tweak func(*minio.Options)) *minio.Client {
	tb.Helper()
	o := &minio.Options{Creds: credentials.NewStaticV4(access, secret, "")}
	if tweak != nil {
		tweak(o)
	}
	c, err := minio.New(endpoint, o)
	if err != nil {
		tb.Fatalf("minio client: %v", err)
	}
	return c
}

func randomBytes(tb testing.TB, n int) []byte {
	tb.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatal(err)
	}
	return b
}

func mustGet(tb testing.TB, c *minio.Client, key string) []byte {
	tb.Helper()
	obj, err := c.GetObject(tb.Context(), testBucket, key, minio.GetObjectOptions{})
	if err != nil {
		tb.Fatalf("get %s: %v", key, err)
	}
	defer obj.Close()
	data, err := io.ReadAll(obj)
	if err != nil {
		tb.Fatalf("read %s: %v", key, err)
	}
	return data
}

func errCode(err error) string { return minio.ToErrorResponse(err).Code }

// The trap this package exists for: gofakes3 v1.2.0 alone stores a 20 MiB
// multipart upload from minio-go with its aws-chunked framing inside.
func TestRoundTrip20MiBEveryUploadMode(t *testing.T) {
	t.Parallel()
	srv, _ := setup(t)
	data := randomBytes(t, 20<<20)
	cases := []struct {
		name   string
		client func(*minio.Options)
		opts   minio.PutObjectOptions
		size   int64
	}{
		{name: "defaults (signed aws-chunked, multipart)", size: int64(len(data))},
		{name: "5 MiB parts", opts: minio.PutObjectOptions{PartSize: 5 << 20}, size: int64(len(data))},
		{name: "unknown size", size: -1},
		{name: "single part", opts: minio.PutObjectOptions{DisableMultipart: true}, size: int64(len(data))},
		{name: "unsigned payload", opts: minio.PutObjectOptions{DisableContentSha256: true}, size: int64(len(data))},
		{name: "content md5", opts: minio.PutObjectOptions{SendContentMd5: true}, size: int64(len(data))},
		{name: "unsigned trailer with crc32c", client: func(o *minio.Options) { o.TrailingHeaders = true },
			opts: minio.PutObjectOptions{DisableContentSha256: true}, size: int64(len(data))},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustClient(t, srv.Endpoint(), testAccess, testSecret, tc.client)
			key := fmt.Sprintf("big/%d.bin", i)
			info, err := c.PutObject(t.Context(), testBucket, key, bytes.NewReader(data), tc.size, tc.opts)
			if err != nil {
				t.Fatalf("put: %v", err)
			}
			if info.Size != int64(len(data)) {
				t.Errorf("put reported %d bytes, want %d", info.Size, len(data))
			}
			st, err := c.StatObject(t.Context(), testBucket, key, minio.StatObjectOptions{})
			if err != nil {
				t.Fatalf("stat: %v", err)
			}
			if st.Size != int64(len(data)) {
				t.Errorf("stored size %d, want %d", st.Size, len(data))
			}
			if got := mustGet(t, c, key); !bytes.Equal(got, data) {
				t.Fatalf("object differs: got %d bytes, want %d", len(got), len(data))
			}
		})
	}
}

func TestDataSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	opts := s3embed.Options{Dir: dir, AccessKey: testAccess, SecretKey: testSecret, Buckets: []string{testBucket}}
	big, small := randomBytes(t, 17<<20), []byte("hello")

	srv := mustStart(t, opts)
	c := mustClient(t, srv.Endpoint(), testAccess, testSecret, nil)
	for key, data := range map[string][]byte{"a/big.bin": big, "a/small.txt": small, "gone.txt": small} {
		if _, err := c.PutObject(t.Context(), testBucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
	}
	if err := c.RemoveObject(t.Context(), testBucket, "gone.txt", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	// Overwrite: the old blob must not come back after the restart.
	if _, err := c.PutObject(t.Context(), testBucket, "a/small.txt", strings.NewReader("hello again"), 11, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	srv2 := mustStart(t, opts)
	c2 := mustClient(t, srv2.Endpoint(), testAccess, testSecret, nil)
	if got := mustGet(t, c2, "a/big.bin"); !bytes.Equal(got, big) {
		t.Errorf("big object differs after restart (%d bytes)", len(got))
	}
	if got := string(mustGet(t, c2, "a/small.txt")); got != "hello again" {
		t.Errorf("small object after restart = %q", got)
	}
	if keys := listKeys(t, c2, minio.ListObjectsOptions{Recursive: true}); strings.Join(keys, ",") != "a/big.bin,a/small.txt" {
		t.Errorf("keys after restart = %v", keys)
	}
}

func TestBuckets(t *testing.T) {
	t.Parallel()
	srv := mustStart(t, s3embed.Options{Dir: t.TempDir(), AccessKey: testAccess, SecretKey: testSecret})
	c := mustClient(t, srv.Endpoint(), testAccess, testSecret, nil)
	ctx := t.Context()
	if ok, err := c.BucketExists(ctx, "fresh"); err != nil || ok {
		t.Fatalf("BucketExists before create = %v, %v", ok, err)
	}
	// Rejected before the body is read; the connection must stay in sync
	// for the requests that follow on it (an empty object still has framing).
	for _, body := range []string{"v", ""} {
		if _, err := c.PutObject(ctx, "fresh", "k", strings.NewReader(body), int64(len(body)), minio.PutObjectOptions{}); errCode(err) != "NoSuchBucket" {
			t.Fatalf("put into missing bucket without auto-create: %v", err)
		}
	}
	if err := c.MakeBucket(ctx, "fresh", minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.MakeBucket(ctx, "fresh", minio.MakeBucketOptions{}); errCode(err) != "BucketAlreadyExists" {
		t.Fatalf("second MakeBucket: %v", err)
	}
	if ok, err := c.BucketExists(ctx, "fresh"); err != nil || !ok {
		t.Fatalf("BucketExists after create = %v, %v", ok, err)
	}
	if _, err := c.PutObject(ctx, "fresh", "empty", strings.NewReader(""), 0, minio.PutObjectOptions{}); err != nil {
		t.Fatalf("put empty object: %v", err)
	}
	if got := mustGetFrom(t, c, "fresh", "empty"); len(got) != 0 {
		t.Fatalf("empty object came back as %d bytes", len(got))
	}

	auto := mustStart(t, s3embed.Options{Dir: t.TempDir(), AutoCreateBuckets: true})
	ac := mustClient(t, auto.Endpoint(), "any", "thing", nil)
	if _, err := ac.PutObject(ctx, "made-on-put", "k", strings.NewReader("v"), 1, minio.PutObjectOptions{}); err != nil {
		t.Fatalf("put with auto-create: %v", err)
	}
	if got := string(mustGetFrom(t, ac, "made-on-put", "k")); got != "v" {
		t.Fatalf("auto-created bucket object = %q", got)
	}
}

func mustGetFrom(tb testing.TB, c *minio.Client, bucket, key string) []byte {
	tb.Helper()
	obj, err := c.GetObject(tb.Context(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestStartValidatesOptionsAndStopsWithContext(t *testing.T) {
	t.Parallel()
	if _, err := s3embed.Start(t.Context(), s3embed.Options{}); err == nil {
		t.Error("Start without Dir succeeded")
	}
	if _, err := s3embed.Start(t.Context(), s3embed.Options{Dir: t.TempDir(), AccessKey: "only"}); err == nil {
		t.Error("Start with an access key but no secret succeeded")
	}
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := s3embed.Start(ctx, s3embed.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := http.Get(srv.URL())
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("server still answers after its context was cancelled")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Close after cancel: %v", err)
	}
}

// An upload refused half way (here: a malformed chunk) must not leave the
// rest of its body on the connection to be parsed as the next request. The
// body smuggles a request after 300 KiB (more than net/http drains); no second
// response may ever arrive. Decoded length 0 and 10 take different paths.
func TestRejectedUploadDoesNotDesyncConnection(t *testing.T) {
	t.Parallel()
	srv := mustStart(t, s3embed.Options{Dir: t.TempDir(), Buckets: []string{testBucket}})
	body := "zz\r\n" + strings.Repeat("x", 300<<10) + "\r\nGET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, decoded := range []int{0, 10} {
		t.Run(fmt.Sprintf("decoded length %d", decoded), func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", srv.Endpoint())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			go fmt.Fprintf(conn, "PUT /%s/k HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n"+
				"X-Amz-Content-Sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER\r\nX-Amz-Decoded-Content-Length: %d\r\n\r\n%s",
				testBucket, srv.Endpoint(), len(body), decoded, body)
			_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("first response %d, want 400", resp.StatusCode)
			}
			if second, err := http.ReadResponse(br, nil); err == nil {
				t.Fatalf("leftover body bytes were parsed as a request (answered %s)", second.Status)
			}
		})
	}
}

func TestCredentialsPerDataDir(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ak1, sk1, err := s3embed.LoadOrCreateCredentials(a)
	if err != nil {
		t.Fatal(err)
	}
	ak2, sk2, err := s3embed.LoadOrCreateCredentials(a)
	if err != nil || ak1 != ak2 || sk1 != sk2 {
		t.Fatalf("a second load gave %q/%q (%v), want the first keys %q/%q", ak2, sk2, err, ak1, sk1)
	}
	ak3, sk3, err := s3embed.LoadOrCreateCredentials(b)
	if err != nil || ak3 == ak1 || sk3 == sk1 || len(sk1) < 32 {
		t.Fatalf("another data dir got %q/%q (%v): want keys of its own", ak3, sk3, err)
	}
	info, err := os.Stat(filepath.Join(a, s3embed.CredentialsFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file: %v, %v; want mode 0600", info.Mode(), err)
	}
	if err := os.Chmod(filepath.Join(a, s3embed.CredentialsFile), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s3embed.LoadOrCreateCredentials(a); err == nil || !strings.Contains(err.Error(), "read by others") {
		t.Fatalf("a world-readable file: %v, want it refused", err)
	}
}
