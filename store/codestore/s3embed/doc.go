// Package s3embed runs an S3-protocol server inside the process, keeping
// objects in files under a directory, for `sless dev` and the tests: with it,
// minio-go is the one code path to object storage everywhere.
//
// The protocol is github.com/johannesboyne/gofakes3 (v1.2.0); s3embed adds what
// it lacks. A front middleware checks AWS Signature V4 (Authorization header or
// presigned URL) against the configured key pair, and decodes aws-chunked
// bodies itself, checking each chunk's chained signature and any
// x-amz-checksum-* (crc32, crc32c, crc64nvme, sha1, sha256) or signed sha256
// before a byte reaches gofakes3. Without that, gofakes3 v1.2.0 stores
// multipart parts sent by minio-go with their chunk framing inside (a 20 MiB
// object came back as 21,000,492 bytes). The file backend writes each object
// to a temporary file and renames it into place, so readers see whole objects
// only and data survives restarts on the same directory.
//
// Limits: one key pair, no ACLs or policies, no versioning; session tokens are
// ignored; the ECDSA (SigV4a) streaming variants are refused with 501.
// Multipart uploads in progress are held in memory by gofakes3 (about twice
// the object size while completing) and are lost on restart; completed objects
// are on disk.
//
// s3embed imports the standard library, gofakes3 and minio's crc64nvme.
package s3embed
