package s3embed_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/signer"
)

func TestRejectsBadCredentials(t *testing.T) {
	t.Parallel()
	srv, good := setup(t)
	cases := []struct {
		name   string
		client *minio.Client
		code   string
	}{
		{"wrong secret", mustClient(t, srv.Endpoint(), testAccess, "not-the-secret", nil), "SignatureDoesNotMatch"},
		{"unknown key", mustClient(t, srv.Endpoint(), "someone-else", testSecret, nil), "InvalidAccessKeyId"},
		{"anonymous client", mustClient(t, srv.Endpoint(), "", "", nil), "AccessDenied"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key := "denied/" + strings.ReplaceAll(tc.name, " ", "-")
			_, err := tc.client.PutObject(t.Context(), testBucket, key, strings.NewReader("x"), 1, minio.PutObjectOptions{})
			if errCode(err) != tc.code {
				t.Fatalf("put error = %v (code %q), want %s", err, errCode(err), tc.code)
			}
			if _, err := tc.client.StatObject(t.Context(), testBucket, key, minio.StatObjectOptions{}); errCode(err) == "NoSuchKey" {
				t.Fatal("an unauthenticated client learned that a key is missing")
			}
			if _, err := good.StatObject(t.Context(), testBucket, key, minio.StatObjectOptions{}); errCode(err) != "NoSuchKey" {
				t.Fatalf("rejected upload was stored (stat error %v)", err)
			}
		})
	}
	t.Run("unsigned request", func(t *testing.T) {
		t.Parallel()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL()+"/"+testBucket+"/raw", strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "<Code>AccessDenied</Code>") {
			t.Fatalf("unsigned PUT: %d %s", resp.StatusCode, body)
		}
	})
}

// tamperProxy forwards to target and flips one byte of every PUT body at
// offset at, keeping the signed Host.
func tamperProxy(t *testing.T, target string, at int64) string {
	t.Helper()
	u, _ := url.Parse("http://" + target)
	p := &httputil.ReverseProxy{ErrorLog: log.New(io.Discard, "", 0), Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
		if r.In.Method == http.MethodPut && r.In.ContentLength > at {
			r.Out.Body = &flipReader{r: r.In.Body, at: at}
		}
	}}
	ts := httptest.NewServer(p)
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://")
}

type flipReader struct {
	r   io.ReadCloser
	at  int64
	pos int64
}

func (f *flipReader) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if f.at >= f.pos && f.at < f.pos+int64(n) {
		p[f.at-f.pos] ^= 0x01
	}
	f.pos += int64(n)
	return n, err
}

func (f *flipReader) Close() error { return f.r.Close() }

func TestRejectsTamperedBodies(t *testing.T) {
	t.Parallel()
	srv, good := setup(t)
	proxy := tamperProxy(t, srv.Endpoint(), 100_000) // inside the second 64 KiB chunk
	data := randomBytes(t, 1<<20)
	cases := []struct {
		name   string
		client func(*minio.Options)
		opts   minio.PutObjectOptions
	}{
		{name: "signed chunks"},
		{name: "signed chunks, multipart", opts: minio.PutObjectOptions{PartSize: 5 << 20}},
		// minio-go sends trailing checksums only on multipart uploads.
		{name: "unsigned trailer with crc32c, multipart", client: func(o *minio.Options) { o.TrailingHeaders = true },
			opts: minio.PutObjectOptions{DisableContentSha256: true, PartSize: 5 << 20}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := mustClient(t, proxy, testAccess, testSecret, tc.client)
			key := fmt.Sprintf("tampered/%d", i)
			body := data
			if tc.opts.PartSize > 0 {
				body = randomBytes(t, 11<<20)
			}
			_, err := c.PutObject(t.Context(), testBucket, key, bytes.NewReader(body), int64(len(body)), tc.opts)
			if errCode(err) != "BadDigest" {
				t.Fatalf("put through tampering proxy: err %v (code %q), want BadDigest", err, errCode(err))
			}
			if _, err := good.StatObject(t.Context(), testBucket, key, minio.StatObjectOptions{}); errCode(err) != "NoSuchKey" {
				t.Fatalf("tampered upload was stored (stat error %v)", err)
			}
		})
	}

	t.Run("signed sha256 payload", func(t *testing.T) {
		t.Parallel()
		body := []byte("the signed body")
		sum := sha256.Sum256(body)
		send := func(payload []byte) *http.Response {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodPut, srv.URL()+"/"+testBucket+"/sha", bytes.NewReader(payload))
			req.Header.Set("X-Amz-Content-Sha256", hex.EncodeToString(sum[:]))
			req = signer.SignV4(*req, testAccess, testSecret, "", "us-east-1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp
		}
		if resp := send([]byte("THE signed body")); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("tampered body: status %d, want 400", resp.StatusCode)
		}
		if _, err := good.StatObject(t.Context(), testBucket, "sha", minio.StatObjectOptions{}); errCode(err) != "NoSuchKey" {
			t.Fatalf("tampered upload was stored (stat error %v)", err)
		}
		if resp := send(body); resp.StatusCode != http.StatusOK {
			t.Fatalf("intact body: status %d, want 200", resp.StatusCode)
		}
	})
}

func TestPresignedURLs(t *testing.T) {
	t.Parallel()
	srv, c := setup(t)
	ctx := t.Context()
	putURL, err := c.PresignedPutObject(ctx, testBucket, "pre/signed.txt", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, putURL.String(), strings.NewReader("presigned"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("presigned PUT: %d", resp.StatusCode)
	}
	getURL, err := c.PresignedGetObject(ctx, testBucket, "pre/signed.txt", time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if status, body := httpGet(t, getURL.String()); status != http.StatusOK || body != "presigned" {
		t.Fatalf("presigned GET: %d %q", status, body)
	}
	other := strings.Replace(getURL.String(), "/pre/signed.txt", "/pre/other.txt", 1)
	if status, body := httpGet(t, other); status != http.StatusForbidden || !strings.Contains(body, "SignatureDoesNotMatch") {
		t.Fatalf("presigned URL reused for another key: %d %s", status, body)
	}
	if status, _ := httpGet(t, srv.URL()+"/"+testBucket+"/pre/signed.txt"); status != http.StatusForbidden {
		t.Fatalf("unsigned GET: %d, want 403", status)
	}
}

func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
