package cli

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A function's answer reaches a pipe or a file byte for byte; only a
// terminal gets a line break after a body without one, so that the shell's
// prompt is not glued to it.
func TestInvokeBodyEndsItsLineOnlyOnATerminal(t *testing.T) {
	for _, body := range []string{`{"hello":"sless"}`, "line\n", "", "\x00\xff"} {
		var buf bytes.Buffer
		w := &bodyWriter{w: &buf}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
		if err := w.end(); err != nil {
			t.Fatal(err)
		}
		if buf.String() != body {
			t.Errorf("piped %q came out as %q", body, buf.String())
		}
	}

	// A pseudo-terminal of the test's own: what is written to its
	// secondary side is read on the primary (the tty turns \n into \r\n).
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	// The primary side is not pollable (no read deadline): a goroutine
	// reads it for the test.
	read := make(chan []byte, 16)
	go func() {
		for {
			buf := make([]byte, 64)
			k, err := ptmx.Read(buf)
			if err != nil {
				close(read)
				return
			}
			read <- buf[:k]
		}
	}()
	for _, c := range []struct{ body, want string }{
		{`{"hello":"sless"}`, "{\"hello\":\"sless\"}\r\n"},
		{"line\n", "line\r\n"},
	} {
		w := &bodyWriter{w: pts}
		if _, err := w.Write([]byte(c.body)); err != nil {
			t.Fatal(err)
		}
		if err := w.end(); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for len(got) < len(c.want) {
			select {
			case b := <-read:
				got = append(got, b...)
			case <-time.After(2 * time.Second):
				t.Fatalf("on a terminal %q came out as %q, want %q", c.body, got, c.want)
			}
		}
		if string(got) != c.want {
			t.Errorf("on a terminal %q came out as %q, want %q", c.body, got, c.want)
		}
	}
}
