package sandbox

import (
	"maps"
	"os"
	"slices"
	"strconv"

	"github.com/slessio/sless/domain"
)

// secretDirBytes caps the tmpfs at domain.SecretFilesDir: it holds the
// files' mount points only (their contents are in bwrap's own tmpfs).
const secretDirBytes = 64 << 10

// checkSecretFiles refuses secret files where they cannot be kept apart
// (ModeNone: no file system of the process's own; an Unassigned sandbox:
// made before its tenant, and so its secrets, is known) and names that are
// not one path element (EINVALID).
func (s *Sandbox) checkSecretFiles(spec Spec) error {
	if len(spec.SecretFiles) == 0 {
		return nil
	}
	switch {
	case s.mode == ModeNone:
		return domain.Errorf(domain.EINVALID, "sandbox: secret files need a sandbox (mode %s has none)", s.mode)
	case spec.Unassigned:
		return domain.Errorf(domain.EINVALID, "sandbox: an unassigned sandbox takes no secret files")
	}
	for name := range spec.SecretFiles {
		if !domain.IsName(name) {
			return domain.Errorf(domain.EINVALID, "sandbox: secret file name %.64q is not a name", name)
		}
	}
	return nil
}

// secretArgs adds the bwrap options that mount files, name → content, at
// domain.SecretFilesDir/<name>, their contents read from descriptors
// firstFD, firstFD+1, ... in the order of the contents it returns (by
// name). The options name descriptors and paths only. As a normal user the
// files are the program's own (0400 in a 0500 folder); as root they are
// root's (bwrap makes them and cannot give them away), 0444 in a 0555
// folder that no process of another uid than the tenant's sees.
func secretArgs(b *argBuilder, files map[string][]byte, firstFD int, root bool) [][]byte {
	if len(files) == 0 {
		return nil
	}
	dirPerms, filePerms := "0500", "0400"
	if root {
		dirPerms, filePerms = "0555", "0444"
	}
	b.dirs("/run")
	b.add("--perms", dirPerms, "--size", strconv.Itoa(secretDirBytes), "--tmpfs", domain.SecretFilesDir)
	var contents [][]byte
	for i, name := range slices.Sorted(maps.Keys(files)) {
		b.add("--perms", filePerms, "--ro-bind-data", strconv.Itoa(firstFD+i), domain.SecretFilesDir+"/"+name)
		contents = append(contents, files[name])
	}
	b.add("--remount-ro", domain.SecretFilesDir)
	return contents
}

// feedSecrets returns the read ends of one pipe per content, for bwrap,
// and writes each content into its pipe from a goroutine that owns the
// write end (a content may be larger than a pipe holds; bwrap reads it
// while it makes the sandbox). A write ends, and its goroutine with it,
// when bwrap read everything or once every read end is closed (bwrap
// gone, the caller's copies closed after it started). On an error the
// pipes made so far are closed.
func feedSecrets(contents [][]byte) ([]*os.File, error) {
	readers := make([]*os.File, 0, len(contents))
	writers := make([]*os.File, 0, len(contents))
	for range contents {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range slices.Concat(readers, writers) {
				f.Close()
			}
			return nil, err
		}
		readers, writers = append(readers, r), append(writers, w)
	}
	for i, w := range writers {
		go func() {
			_, _ = w.Write(contents[i])
			w.Close()
		}()
	}
	return readers, nil
}
