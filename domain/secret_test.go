package domain

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A secret's versions go on after a delete, so a function version that
// names an old one never gets a value set later under the same name.
func TestSecretVersions(t *testing.T) {
	now := time.Now()
	s := NewSecret("sless-0123456789abcdef", "db-password")
	if _, err := s.Delete(now); ErrorCode(err) != ENOTFOUND {
		t.Fatalf("delete of an unknown secret: %v, want NOT_FOUND", err)
	}
	for want := 1; want <= 2; want++ {
		evs, err := s.Set(now.Add(time.Duration(want) * time.Second))
		if err != nil || len(evs) != 1 || evs[0].(SecretSet).Version != want {
			t.Fatalf("set %d: %v %v", want, evs, err)
		}
		s.Apply(evs[0])
	}
	if !s.CreatedAt.Equal(now.Add(time.Second)) || !s.UpdatedAt.Equal(now.Add(2*time.Second)) {
		t.Errorf("created %v, updated %v: want the first and the last set", s.CreatedAt, s.UpdatedAt)
	}
	evs, err := s.Delete(now)
	if err != nil {
		t.Fatal(err)
	}
	s.Apply(evs[0])
	evs, _ = s.Set(now)
	if s.Exists || evs[0].(SecretSet).Version != 3 {
		t.Errorf("set after a delete: %+v, want version 3", evs)
	}
	if _, err := NewSecret("ns", "Bad_Name").Set(now); fieldOf(err) != "name" {
		t.Errorf("a bad name: %v", err)
	}
}

func TestFunctionSecretReferences(t *testing.T) {
	have := map[string]int{"db": 2, "api": 1}
	for _, c := range []struct {
		name    string
		secrets map[string]string
		files   []string
		field   string // "" valid
		code    string
	}{
		{"env and file", map[string]string{"DB_PASSWORD": "db"}, []string{"api", "db"}, "", ""},
		{"bad variable", map[string]string{"1X": "db"}, nil, "secrets", EINVALID},
		{"reserved variable", map[string]string{"SLESS_X": "db"}, nil, "secrets", EINVALID},
		{"variable also in env_vars", map[string]string{"PLAIN": "db"}, nil, "secrets", EINVALID},
		{"bad secret name", map[string]string{"X": "Not_A_Name"}, nil, "secrets.X", EINVALID},
		{"file twice", nil, []string{"db", "db"}, "secret_files", EINVALID},
		{"unknown secret", map[string]string{"X": "nope"}, nil, "secrets", EUNPROCESSABLE},
		{"unknown file", nil, []string{"nope"}, "secrets", EUNPROCESSABLE},
	} {
		cfg, err := FunctionSpec{Runtime: "python3.11", EnvVars: map[string]string{"PLAIN": "x"},
			Secrets: c.secrets, SecretFiles: c.files, SecretVersions: have}.Config()
		if fieldOf(err) != c.field || (err != nil && ErrorCode(err) != c.code) {
			t.Errorf("%s: %v, want field %q code %q", c.name, err, c.field, c.code)
		}
		if err == nil && (len(cfg.SecretVersions) != len(cfg.SecretNames()) || cfg.SecretVersions["db"] != 2) {
			t.Errorf("%s: secret versions %v, want those of %v only", c.name, cfg.SecretVersions, cfg.SecretNames())
		}
	}
}

// A new secret version is a new function version reusing the build, and a
// rollback brings back the version the old one ran with.
func TestSecretVersionMakesAFunctionVersion(t *testing.T) {
	now := time.Now()
	f := NewFunction("sless-0123456789abcdef", "f")
	apply := applier(t, f)
	spec := FunctionSpec{Runtime: "python3.11", Secrets: map[string]string{"DB": "db"}, SecretVersions: map[string]int{"db": 1}}
	apply(f.Create(spec, now))
	apply(mustUpload(f, "d1", now))
	apply(f.SucceedBuild(1, "img:1", "", now))
	spec.SecretVersions = map[string]int{"db": 2}
	evs, err := f.UpdateConfig(spec, now)
	if err != nil || len(evs) != 4 { // config, version, reused build, activation
		t.Fatalf("a new secret version: %v %v; want a new version that reuses the build", evs, err)
	}
	apply(evs, nil)
	if f.ActiveVersion != 2 || f.Config.SecretVersions["db"] != 2 {
		t.Fatalf("active %d with %v, want version 2 with db 2", f.ActiveVersion, f.Config.SecretVersions)
	}
	apply(f.Rollback(1, now))
	if f.Config.SecretVersions["db"] != 1 {
		t.Errorf("after the rollback: %v, want db 1", f.Config.SecretVersions)
	}
}

func TestCredentialEnvWarnings(t *testing.T) {
	env := map[string]string{"DB_PASSWORD": "", "GITHUB_TOKEN": "", "client_secret": "", "AWS_ACCESS_KEY": "", "KEYBOARD": "", "REGION": "", "MONKEY": ""}
	var got []string
	for _, w := range CredentialEnvWarnings(env) {
		got = append(got, strings.Fields(strings.TrimPrefix(w, "env_vars."))[0])
	}
	want := []string{"AWS_ACCESS_KEY", "DB_PASSWORD", "GITHUB_TOKEN", "client_secret"}
	if !slices.Equal(got, want) {
		t.Errorf("warned of %v, want %v", got, want)
	}
}
