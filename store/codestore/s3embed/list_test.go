package s3embed_test

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"
)

func listKeys(tb testing.TB, c *minio.Client, opts minio.ListObjectsOptions) []string {
	tb.Helper()
	var keys []string
	for o := range c.ListObjects(tb.Context(), testBucket, opts) {
		if o.Err != nil {
			tb.Fatalf("list: %v", o.Err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

func TestListDeleteAndRange(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	ctx := t.Context()
	var want []string
	for i := range 25 {
		key := fmt.Sprintf("fn/%02d/file", i)
		want = append(want, key)
		if _, err := c.PutObject(ctx, testBucket, key, strings.NewReader(key), int64(len(key)), minio.PutObjectOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutObject(ctx, testBucket, "other/x", strings.NewReader("0123456789"), 10, minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, v1 := range []bool{false, true} {
		got := listKeys(t, c, minio.ListObjectsOptions{Prefix: "fn/", Recursive: true, MaxKeys: 10, UseV1: v1})
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("paged recursive listing (v1=%v) = %v", v1, got)
		}
		dirs := listKeys(t, c, minio.ListObjectsOptions{Prefix: "fn/", MaxKeys: 7, UseV1: v1})
		if len(dirs) != 25 || dirs[0] != "fn/00/" || dirs[24] != "fn/24/" || !sort.StringsAreSorted(dirs) {
			t.Errorf("paged delimited listing (v1=%v) = %v", v1, dirs)
		}
	}

	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(2, 5); err != nil {
		t.Fatal(err)
	}
	obj, err := c.GetObject(ctx, testBucket, "other/x", opts)
	if err != nil {
		t.Fatal(err)
	}
	part, err := io.ReadAll(obj)
	obj.Close()
	if err != nil || string(part) != "2345" {
		t.Fatalf("range read = %q, %v", part, err)
	}

	objects := make(chan minio.ObjectInfo)
	go func() {
		defer close(objects)
		for _, k := range want {
			objects <- minio.ObjectInfo{Key: k}
		}
	}()
	for e := range c.RemoveObjects(ctx, testBucket, objects, minio.RemoveObjectsOptions{}) {
		t.Errorf("remove %s: %v", e.ObjectName, e.Err)
	}
	if got := listKeys(t, c, minio.ListObjectsOptions{Recursive: true}); strings.Join(got, ",") != "other/x" {
		t.Errorf("after bulk delete: %v", got)
	}
	if _, err := c.StatObject(ctx, testBucket, "fn/00/file", minio.StatObjectOptions{}); errCode(err) != "NoSuchKey" {
		t.Errorf("deleted object: stat error %v, want NoSuchKey", err)
	}
}

// Keys with characters that percent-encoding treats differently must still
// produce matching signatures (the canonical URI is rebuilt server-side).
func TestOddKeys(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	for _, key := range []string{
		"dir/with space+plus/ünïcode~!*'().txt",
		"a//double/slash",
		"percent%20literal&and=query?mark#hash",
		"../dots/../../look-like-traversal",
	} {
		if _, err := c.PutObject(t.Context(), testBucket, key, strings.NewReader(key), int64(len(key)), minio.PutObjectOptions{}); err != nil {
			t.Fatalf("put %q: %v", key, err)
		}
		if got := string(mustGet(t, c, key)); got != key {
			t.Fatalf("get %q = %q", key, got)
		}
		keys := listKeys(t, c, minio.ListObjectsOptions{Prefix: key, Recursive: true})
		if len(keys) != 1 || keys[0] != key {
			t.Fatalf("list %q = %q", key, keys)
		}
	}
}
