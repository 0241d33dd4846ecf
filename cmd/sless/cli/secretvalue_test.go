package cli

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/slessio/sless/internal/testutil"
	"github.com/slessio/sless/secrets"
)

// TestSecretValueAtATerminalIsNotEchoed: on a terminal (a pseudo-terminal
// here) the value is asked for at a prompt and not echoed; what the
// terminal shows is the prompt only.
func TestSecretValueAtATerminalIsNotEchoed(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("no pseudo-terminal to test with: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()

	shown := &testutil.SyncBuffer{}
	go func() { _, _ = io.Copy(shown, ptmx) }() // what the terminal shows, until ptmx is closed

	type result struct {
		value []byte
		err   error
	}
	done := make(chan result, 1)
	go func() {
		v, err := secretValue("db", "", tty, tty)
		done <- result{v, err}
	}()
	// Type once the prompt is shown and the terminal echoes no more.
	testutil.WaitFor(t, 10*time.Second, func() bool {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		return strings.Contains(shown.String(), "Value of secret db (not echoed): ") && err == nil && tio.Lflag&unix.ECHO == 0
	})
	if _, err := ptmx.Write([]byte("typed-s3cret\r")); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("secretValue did not return after the value and Enter were typed")
	}
	if r.err != nil || string(r.value) != "typed-s3cret" {
		t.Fatalf("value read at the terminal = %q (%v)", r.value, r.err)
	}
	time.Sleep(200 * time.Millisecond) // for an echo, if there were one, to reach shown
	if strings.Contains(shown.String(), "typed-s3cret") {
		t.Fatalf("the terminal showed %q: the value was echoed", shown.String())
	}
}

// TestSecretValueFromFilesAndPipes: a file is taken byte for byte, a pipe
// loses one trailing newline; empty and oversized values are refused.
func TestSecretValueFromFilesAndPipes(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pem := []byte("-----BEGIN KEY-----\nabc\n-----END KEY-----\n")
	if v, err := secretValue("k", write("key.pem", pem), nil, io.Discard); err != nil || !bytes.Equal(v, pem) {
		t.Fatalf("from a file: %q (%v), want it byte for byte", v, err)
	}
	for in, want := range map[string]string{"pw\n": "pw", "pw\r\n": "pw", "pw\n\n": "pw\n", "pw": "pw", "\xff\x00": "\xff\x00"} {
		if v, err := secretValue("k", "", strings.NewReader(in), io.Discard); err != nil || string(v) != want {
			t.Errorf("from stdin %q: %q (%v), want %q", in, v, err, want)
		}
	}
	if _, err := secretValue("k", "", strings.NewReader("\n"), io.Discard); err == nil {
		t.Error("an empty value from stdin was taken")
	}
	big := write("big", bytes.Repeat([]byte("x"), secrets.MaxValueBytes+1))
	if _, err := secretValue("k", big, nil, io.Discard); err == nil || !strings.Contains(err.Error(), "64 KiB") {
		t.Errorf("a value over 64 KiB: %v", err)
	}
	if v, err := secretValue("k", write("max", bytes.Repeat([]byte("x"), secrets.MaxValueBytes)), nil, io.Discard); err != nil || len(v) != secrets.MaxValueBytes {
		t.Errorf("a value of exactly 64 KiB: %d bytes (%v)", len(v), err)
	}
	if _, err := secretValue("k", filepath.Join(dir, "absent"), nil, io.Discard); err == nil || !strings.Contains(err.Error(), "--from-file") {
		t.Errorf("a missing file: %v", err)
	}
}
