package pglocal

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"syscall"
)

// adopt makes the existing cluster in dataDir the account's: a cluster that an
// earlier sless ran as the machine's shared postgres user (or that any other
// user owns) keeps its data and leaves that user's reach. The data directory
// ends 0700 and the account's. It returns the uid that owned the cluster, and
// whether anything was handed over.
//
// The old owner may be hostile (the shared postgres user, taken over through
// the host's own PostgreSQL) and the walk runs as root, so it must not be
// turned against anything outside the cluster: every directory is taken from
// the old owner (handed over, 0700) before it is read, so nothing in it can be
// swapped afterwards; entries are reached inside dataDir only (os.Root) and
// changed through the open file; symbolic links are not followed, and a file
// with other names elsewhere (a hard link) or one of root's is left as it is.
// Until the walk is over the data directory stays root's, so an interrupted
// hand-over is finished by the next start.
func (a account) adopt(dataDir string) (from uint32, handed bool, err error) {
	if fi, err := os.Lstat(dataDir); err != nil {
		return 0, false, err
	} else if !fi.IsDir() {
		return 0, false, fmt.Errorf("data directory %s is not a directory", dataDir)
	}
	root, err := os.OpenRoot(dataDir)
	if err != nil {
		return 0, false, err
	}
	defer root.Close()
	top, err := root.Open(".")
	if err != nil {
		return 0, false, err
	}
	defer top.Close()
	st, perm, err := fileStat(top)
	if err != nil {
		return 0, false, err
	}
	if st.Uid == a.uid {
		if perm != 0o700 {
			return st.Uid, false, top.Chmod(0o700)
		}
		return st.Uid, false, nil
	}
	fail := func(err error) (uint32, bool, error) {
		return st.Uid, false, fmt.Errorf("hand the cluster in %s (uid %d's) to user %s: %w", dataDir, st.Uid, a.name, err)
	}
	if err := lockDir(top, 0, 0); err != nil {
		return fail(err)
	}
	if err := a.adoptEntries(root, top, "."); err != nil {
		return fail(err)
	}
	if err := top.Chown(int(a.uid), int(a.gid)); err != nil {
		return fail(err)
	}
	return st.Uid, true, nil
}

// adoptEntries hands over what directory dir (name, inside root, handed over
// already) holds. At the top, sless's own files (the password, the server
// log) are not the server's, and keep their owner.
func (a account) adoptEntries(root *os.Root, dir *os.File, name string) error {
	entries, err := dir.ReadDir(-1)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if name == "." && (e.Name() == passwordFile || e.Name() == logFile) {
			continue
		}
		p := path.Join(name, e.Name())
		switch e.Type() {
		case fs.ModeDir:
			err = a.adoptDir(root, p)
		case 0:
			err = a.adoptFile(root, p)
		default:
			// Symbolic links (pg_tblspc's, or planted), sockets, devices: a
			// link is not followed, and its own owner does not matter.
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (a account) adoptDir(root *os.Root, name string) error {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, perm, err := fileStat(f)
	if err != nil {
		return err
	}
	if st.Uid == 0 {
		return nil // root's: not the old owner's to give
	}
	if st.Uid != a.uid || perm&0o077 != 0 {
		if err := lockDir(f, a.uid, a.gid); err != nil {
			return err
		}
	}
	return a.adoptEntries(root, f, name)
}

func (a account) adoptFile(root *os.Root, name string) error {
	// O_NONBLOCK: a FIFO swapped in before the walk must not block it.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	st, perm, err := fileStat(f)
	if err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Nlink != 1 || st.Uid == 0 {
		return nil
	}
	if st.Uid != a.uid {
		if err := f.Chown(int(a.uid), int(a.gid)); err != nil {
			return err
		}
	}
	if perm&0o077 != 0 {
		return f.Chmod(perm & 0o700)
	}
	return nil
}

// lockDir gives the open directory f to uid:gid, 0700, so that no one else
// can add, remove or rename its entries.
func lockDir(f *os.File, uid, gid uint32) error {
	if err := f.Chown(int(uid), int(gid)); err != nil {
		return err
	}
	return f.Chmod(0o700)
}

func fileStat(f *os.File) (*syscall.Stat_t, fs.FileMode, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, 0, fmt.Errorf("%s: no owner information", f.Name())
	}
	return st, fi.Mode().Perm(), nil
}
