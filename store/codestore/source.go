package codestore

import (
	"bytes"
	"context"
	"encoding/base64"
	"unicode/utf8"
)

// SourceFile is one user file as GET .../source shows it (SPEC §2).
type SourceFile struct {
	Name string `json:"name"`
	// Content is the text, or base64 of the bytes when Binary.
	Content string `json:"content"`
	// Binary is set when the file is not valid UTF-8 or contains a NUL byte.
	Binary bool `json:"binary"`
}

// Source reads the stored zip at zipKey and returns the user's files sorted
// by name (the generated Dockerfile is not among them: it was never in the
// zip). The zip is checked as GetVerified checks it, against the digest its
// key names: keys are content-addressed (Put names the zip's directory after
// its digest), so that is the digest its version recorded. A caller that
// has the version's Digest at hand may call GetVerified and SourceFiles.
//
// Errors: EUNPROCESSABLE when the stored zip is not the uploaded code (it
// was changed in the object store after the upload); ENOTFOUND for a
// missing key; EUNAVAILABLE for an unreachable store.
func (s *Store) Source(ctx context.Context, zipKey string) ([]SourceFile, error) {
	_, files, err := s.GetVerified(ctx, zipKey, zipKeyDigest(zipKey))
	if err != nil {
		return nil, err
	}
	return SourceFiles(files), nil
}

// SourceFiles converts files to their JSON view: text as is, anything else
// base64-encoded with Binary set.
func SourceFiles(files []File) []SourceFile {
	out := make([]SourceFile, len(files))
	for i, f := range files {
		if utf8.Valid(f.Data) && bytes.IndexByte(f.Data, 0) < 0 {
			out[i] = SourceFile{Name: f.Name, Content: string(f.Data)}
		} else {
			out[i] = SourceFile{Name: f.Name, Content: base64.StdEncoding.EncodeToString(f.Data), Binary: true}
		}
	}
	return out
}
