package secrets_test

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slessio/sless/secrets"
)

func TestParseKeyring(t *testing.T) {
	t.Parallel()
	current, older := newKeyLine(), newKeyLine()
	keys, err := secrets.ParseKeyring([]byte("# the current key\n\n  " + current + "  \n# an older one\n" + older + "\n" + current + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fingerprint(t, current), fingerprint(t, older)}
	if got := keys.IDs(); strings.Join(got, ",") != strings.Join(want, ",") || keys.ID() != want[0] {
		t.Fatalf("IDs %v, ID %s; want %v, the first current", got, keys.ID(), want)
	}
	if len(want[0]) != 16 {
		t.Fatalf("fingerprint %q: want 16 hex digits", want[0])
	}

	short := base64.StdEncoding.EncodeToString(make([]byte, 16))
	for _, bad := range []string{"", "# only a comment\n", current + "\nnot-base64!\n", short + "\n"} {
		_, err := secrets.ParseKeyring([]byte(bad))
		if err == nil {
			t.Fatalf("ParseKeyring(%q) took it", bad)
		}
		if strings.Contains(err.Error(), "not-base64") || strings.Contains(err.Error(), short) {
			t.Fatalf("error %v quotes the line", err)
		}
	}
	if _, err := secrets.ParseKeyring([]byte(current + "\nnot-base64!\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("error %v does not name line 2", err)
	}
}

// TestKeyringPrintsNoKey: however a keyring is formatted, alone or in a
// struct, the output holds its fingerprints and no form of its keys.
func TestKeyringPrintsNoKey(t *testing.T) {
	t.Parallel()
	line := newKeyLine()
	raw, _ := base64.StdEncoding.DecodeString(line)
	keys, err := secrets.ParseKeyring([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	type config struct {
		Keys  *secrets.Keyring
		Other int
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%X", "%q", "%d"} {
		for _, arg := range []any{keys, config{Keys: keys}, &config{Keys: keys}, []*secrets.Keyring{keys}} {
			out := fmt.Sprintf(verb, arg)
			for _, form := range []string{line, string(raw), hex.EncodeToString(raw), strings.ToUpper(hex.EncodeToString(raw)), fmt.Sprint(raw)} {
				if strings.Contains(out, form) {
					t.Fatalf("%s of %T shows the key: %s", verb, arg, out)
				}
			}
			if _, ok := arg.(*secrets.Keyring); ok && !strings.Contains(out, keys.ID()) {
				t.Fatalf("%s of the keyring = %q, want its fingerprint", verb, out)
			}
		}
	}
}

func TestLoadKeyringFileRefusesOpenModes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "kek")
	line := newKeyLine()
	if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.LoadKeyringFile(path); err != nil {
		t.Fatalf("mode 0600: %v", err)
	}
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o620} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := secrets.LoadKeyringFile(path)
		if err == nil {
			t.Fatalf("mode %04o taken", mode)
		}
		for _, want := range []string{fmt.Sprintf("%04o", mode), "chmod 600 " + path} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("mode %04o: error %q does not say %q", mode, err, want)
			}
		}
		if strings.Contains(err.Error(), line) {
			t.Fatalf("error %v shows the key", err)
		}
	}
}

func TestKeyringFromEnv(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(name string) string {
			if name == secrets.EnvKey {
				return v
			}
			return ""
		}
	}
	line := newKeyLine()

	inline, err := secrets.KeyringFromEnv(env(line+"\n"), "")
	if err != nil || inline.ID() != fingerprint(t, line) {
		t.Fatalf("inline key: %v, %v", inline, err)
	}

	older := newKeyLine()
	// Several inline keys, the current one first: a rotation by restarts.
	both, err := secrets.KeyringFromEnv(env(line+", "+older), "")
	if err != nil || strings.Join(both.IDs(), ",") != fingerprint(t, line)+","+fingerprint(t, older) {
		t.Fatalf("inline keys: %v, %v", both, err)
	}
	if _, err := secrets.KeyringFromEnv(env(line+",not-a-key"), ""); err == nil || strings.Contains(err.Error(), line) {
		t.Fatalf("inline keys with a bad one: %v", err)
	}

	path := filepath.Join(t.TempDir(), "kek")
	if err := os.WriteFile(path, []byte(line+"\n"+older+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fromFile, err := secrets.KeyringFromEnv(env(path), "/never/used")
	if err != nil || strings.Join(fromFile.IDs(), ",") != fingerprint(t, line)+","+fingerprint(t, older) {
		t.Fatalf("key file: %v, %v", fromFile, err)
	}

	// A mistyped key (hex, not base64) is neither: the error does not quote it.
	typo := hex.EncodeToString(make([]byte, 32))
	if _, err := secrets.KeyringFromEnv(env(typo), ""); err == nil || strings.Contains(err.Error(), typo) || !strings.Contains(err.Error(), secrets.EnvKey) {
		t.Fatalf("a mistyped key: %v", err)
	}

	if _, err := secrets.KeyringFromEnv(env(""), ""); !errors.Is(err, secrets.ErrNoKey) || !strings.Contains(err.Error(), "SLESS_SECRETS_KEY is not set") {
		t.Fatalf("unset without a dev dir: %v, want ErrNoKey", err)
	}

	dir := filepath.Join(t.TempDir(), "data")
	dev, err := secrets.KeyringFromEnv(env(""), dir)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, secrets.DevKeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("dev key file: %v, %v; want mode 0600", fi, err)
	}
	again, err := secrets.KeyringFromEnv(env(""), dir)
	if err != nil || again.ID() != dev.ID() {
		t.Fatalf("second dev start: %v, %v; want the same key %s", again, err, dev.ID())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("dev dir holds %d files, want only %s", len(entries), secrets.DevKeyFile)
	}
}

// fingerprint is the kek_id of a key line.
func fingerprint(tb testing.TB, line string) string {
	tb.Helper()
	key, err := base64.StdEncoding.DecodeString(line)
	if err != nil {
		tb.Fatal(err)
	}
	return secrets.Fingerprint(key)
}
