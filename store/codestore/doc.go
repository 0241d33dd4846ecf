// Package codestore owns function code at rest: it validates uploaded zips
// (paths, types, entry and size caps counted on real bytes), computes the code
// digest, renders the build context (user files + generated Dockerfile, as a
// deterministic tar.gz), and keeps the original zip and the context in an
// S3-compatible object store through minio-go, under
//
//	code/<namespace>/<function>/i<incarnation>/<code digest hex>/source.zip
//	code/<namespace>/<function>/i<incarnation>/<code digest hex>/context-<context sha256 prefix>.tar.gz
//
// Keys are content-addressed, so storing the same code twice writes nothing
// (unless the stored copy was changed since: then it is replaced). The
// incarnation (domain.Function.Incarnation) keeps the code of a function
// deleted and created again under its name apart from the code of the one
// before, so the cleanup of the deleted one (DeleteCode) cannot take the new
// one's. Code stored before keys named incarnations sits directly under
// code/<namespace>/<function>/<code digest hex>/; versions keep the keys
// their events recorded, so reads find it there.
// Reads that serve code (GetVerified, GetVerifiedContext, Source) check it
// against what the version recorded at upload, since anyone holding the
// object store's credentials can overwrite an object (verify.go).
// minio-go errors are mapped to domain codes here (NoSuchKey → ENOTFOUND,
// unreachable store → EUNAVAILABLE). Subpackage s3embed is the S3 server
// used in development and tests.
//
// codestore imports the standard library, domain and minio-go.
package codestore
