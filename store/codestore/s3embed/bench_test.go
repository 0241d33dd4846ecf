package s3embed_test

import (
	"bytes"
	"testing"

	"github.com/minio/minio-go/v7"
)

// BenchmarkPutGet20MiB is one 20 MiB object through minio-go's default
// upload (signed aws-chunked, two parts) and back.
func BenchmarkPutGet20MiB(b *testing.B) {
	srv := mustStart(b, optsFor(b))
	c := mustClient(b, srv.Endpoint(), testAccess, testSecret, nil)
	data := randomBytes(b, 20<<20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := c.PutObject(b.Context(), testBucket, "bench", bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{}); err != nil {
			b.Fatal(err)
		}
		if got := mustGet(b, c, "bench"); len(got) != len(data) {
			b.Fatalf("got %d bytes", len(got))
		}
	}
}
