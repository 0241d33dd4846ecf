package domain

import "testing"

func TestSuggest(t *testing.T) {
	known := []string{"name", "runtime", "memory", "timeout", "memory_mb", "http"}
	for got, want := range map[string]string{"timeot": "timeout", "memroy_mb": "memory_mb", "htp": "http", "runtim": "runtime",
		"xyz": "", "name": "name", "cpu": ""} {
		if s := Suggest(got, known); s != want {
			t.Errorf("Suggest(%q) = %q, want %q", got, s, want)
		}
	}
}
