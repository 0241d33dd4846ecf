package cli

import "testing"

// TestHeadlineOfATraceback: a listing shows what went wrong, the exception's
// own line of a Python traceback, not its first line.
func TestHeadlineOfATraceback(t *testing.T) {
	for in, want := range map[string]string{
		"Traceback (most recent call last):\n  File \"/app/function/handler.py\", line 2, in handle\n    raise ValueError(\"bad input\")\nValueError: bad input\n": "ValueError: bad input",
		"Traceback (most recent call last):\n  File \"x.py\", line 1\n    1/0\nZeroDivisionError: division by zero":                                                "ZeroDivisionError: division by zero",
		"Error: boom\n    at handle (/app/function/handler.js:2:9)":                                                                                                "Error: boom",
		"exit status 1: the function timed out": "exit status 1: the function timed out",
		"":                                      "",
	} {
		if got := headline(in); got != want {
			t.Errorf("headline(%q) = %q, want %q", in, got, want)
		}
	}
}
