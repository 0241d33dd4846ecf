package codestore

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
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

// maxStoredZip bounds how much Source reads: uploads are capped well below.
const maxStoredZip = 64 << 20

// Source reads the stored zip at key and returns the user's files sorted by
// name (the generated Dockerfile is not among them: it was never in the zip).
// A missing key is ENOTFOUND, an unreachable store EUNAVAILABLE.
func (s *Store) Source(ctx context.Context, key string) ([]SourceFile, error) {
	rc, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxStoredZip+1))
	if err != nil {
		return nil, mapErr("read "+key, err)
	}
	if len(data) > maxStoredZip {
		return nil, fmt.Errorf("read %s: stored zip is larger than %d bytes", key, maxStoredZip)
	}
	files, err := ValidateZip(data, s.limits)
	if err != nil {
		// Not the caller's fault (it was valid when stored): keep it internal.
		return nil, fmt.Errorf("read %s: stored zip does not validate: %s", key, err)
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
