// Package codestore owns function code at rest: it validates uploaded zips
// (paths, types, entry and size caps counted on real bytes), computes the code
// digest, renders the build context (user files + generated Dockerfile, as a
// deterministic tar.gz), and keeps the original zip and the context in an
// S3-compatible object store through minio-go, under
//
//	code/<namespace>/<function>/<code digest hex>/source.zip
//	code/<namespace>/<function>/<code digest hex>/context-<context sha256 prefix>.tar.gz
//
// Keys are content-addressed, so storing the same code twice writes nothing
// (unless the stored copy was changed since: then it is replaced).
// Reads that serve code (GetVerified, GetVerifiedContext, Source) check it
// against what the version recorded at upload, since anyone holding the
// object store's credentials can overwrite an object (verify.go).
// minio-go errors are mapped to domain codes here (NoSuchKey → ENOTFOUND,
// unreachable store → EUNAVAILABLE). Subpackage s3embed is the S3 server
// used in development and tests.
//
// codestore imports the standard library, domain and minio-go.
package codestore
