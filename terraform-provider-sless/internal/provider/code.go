package provider

import (
	"fmt"
	"os"

	"github.com/slessio/sless/store/codestore"
)

// code is a function's code as the provider uploads it: the zip and the
// digest the server computes of it (codestore.Digest over names, modes and
// contents), which is what code_hash holds.
type code struct {
	zip    []byte
	digest string
}

// zipDir zips source_dir deterministically (codestore.ZipDir: sorted
// entries, fixed timestamps and modes), so an unchanged directory never
// shows a diff.
func zipDir(dir string) (code, error) {
	data, err := codestore.ZipDir(dir, nil)
	if err != nil {
		return code{}, fmt.Errorf("source_dir: %w", err)
	}
	return codeOf(data, "source_dir "+dir)
}

// readZip reads the zip at code_path.
func readZip(p string) (code, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return code{}, fmt.Errorf("code_path: %w", err)
	}
	return codeOf(data, "code_path "+p)
}

// codeOf checks a zip as the server will and computes its digest.
func codeOf(data []byte, what string) (code, error) {
	files, err := codestore.ValidateZip(data, codestore.DefaultLimits())
	if err != nil {
		return code{}, fmt.Errorf("%s: %s", what, messageOf(err))
	}
	return code{zip: data, digest: codestore.Digest(files)}, nil
}
