package domain

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Secrets: a namespace's named, versioned values that functions receive as
// environment variables or as files under SecretFilesDir. The events of a
// secret carry its name and version only: the value is sealed apart from the
// log (package secrets), so deleting it destroys it (crypto-shredding),
// which an append-only log cannot do for anything it holds.
const (
	// MaxSecretRefs is how many secrets one function may use, as env
	// variables and files together.
	MaxSecretRefs = 50
	// SecretFilesDir is where a function finds its secret_files, one file
	// per secret, named as the secret.
	SecretFilesDir = "/run/secrets"
)

// Secret is the aggregate of one namespace secret. Its versions go on after
// a delete (a secret set again under the name is a new version), so a
// function version that names an old one never gets another value.
type Secret struct {
	Namespace string
	Name      string
	Exists    bool
	// Version is the newest version (0: never set).
	Version   int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// NewSecret returns the empty aggregate of a secret, ready to fold events into.
func NewSecret(ns, name string) *Secret { return &Secret{Namespace: ns, Name: name} }

// Apply folds one event into the aggregate.
func (s *Secret) Apply(ev Event) {
	switch e := ev.(type) {
	case SecretSet:
		if !s.Exists {
			s.CreatedAt = e.At
		}
		s.Exists, s.Version, s.UpdatedAt = true, e.Version, e.At
	case SecretDeleted:
		s.Exists, s.CreatedAt, s.UpdatedAt = false, time.Time{}, time.Time{}
	}
}

// Set returns the event of a new version of the secret (its value is
// sealed by the caller under that version), or EINVALID for a bad name.
// Every set is a new version: the platform cannot compare a value it does
// not keep in the log.
func (s *Secret) Set(now time.Time) ([]Event, error) {
	if err := ValidateName("name", s.Name); err != nil {
		return nil, err
	}
	return []Event{SecretSet{Namespace: s.Namespace, Name: s.Name, Version: s.Version + 1, At: now}}, nil
}

// Delete returns SecretDeleted, or ENOTFOUND when there is no such secret.
func (s *Secret) Delete(now time.Time) ([]Event, error) {
	if !s.Exists {
		return nil, Errorf(ENOTFOUND, "secret %q not found", s.Name)
	}
	return []Event{SecretDeleted{At: now}}, nil
}

// SecretStream returns the stream id of a secret.
func SecretStream(ns, name string) string { return "secret:" + ns + "/" + name }

// SecretNames returns the secrets a configuration uses, sorted, each once.
func (c FunctionConfig) SecretNames() []string {
	names := slices.Collect(maps.Values(c.Secrets))
	names = append(names, c.SecretFiles...)
	slices.Sort(names)
	return slices.Compact(names)
}

// UsesSecret reports whether the configuration uses the named secret.
func (c FunctionConfig) UsesSecret(name string) bool {
	return slices.Contains(c.SecretNames(), name)
}

// validateSecrets checks the secret references of c and keeps the versions
// of the secrets it uses only. versions are the newest versions of the
// namespace's secrets as the caller read them (nil: none known); a
// reference to a secret with none is EUNPROCESSABLE.
func (c *FunctionConfig) validateSecrets(versions map[string]int) error {
	if len(c.Secrets)+len(c.SecretFiles) > MaxSecretRefs {
		return FieldErrorf("secrets", "uses %d secrets; at most %d (env and files together) are allowed", len(c.Secrets)+len(c.SecretFiles), MaxSecretRefs)
	}
	for _, env := range slices.Sorted(maps.Keys(c.Secrets)) {
		switch {
		case !envVarNameRE.MatchString(env):
			return FieldErrorf("secrets", "variable name %.64q must match [A-Za-z_][A-Za-z0-9_]*", env)
		case reservedEnvVar[env] || strings.HasPrefix(strings.ToUpper(env), "SLESS_"):
			return FieldErrorf("secrets", "variable name %.64q is reserved by the platform", env)
		}
		if _, ok := c.EnvVars[env]; ok {
			return FieldErrorf("secrets", "variable %q is also set in env_vars; a variable comes from one of them", env)
		}
		if err := ValidateName("secrets."+env, c.Secrets[env]); err != nil {
			return err
		}
	}
	files := slices.Clone(c.SecretFiles)
	slices.Sort(files)
	for i, name := range files {
		if err := ValidateName("secret_files", name); err != nil {
			return err
		}
		if i > 0 && files[i-1] == name {
			return FieldErrorf("secret_files", "names %q twice", name)
		}
	}
	if len(files) == 0 {
		files = nil
	}
	if len(c.Secrets) == 0 {
		c.Secrets = nil
	}
	c.SecretFiles = files
	used := map[string]int{}
	for _, name := range c.SecretNames() {
		v := versions[name]
		if v < 1 {
			return &Error{Code: EUNPROCESSABLE, Field: "secrets",
				Message: "secrets: secret " + name + " does not exist in this namespace; set it first (sless secret set " + name + ")"}
		}
		used[name] = v
	}
	if len(used) == 0 {
		used = nil
	}
	c.SecretVersions = used
	return nil
}

// credentialName matches env var names that look like they hold a
// credential: *PASSWORD*, *SECRET*, *TOKEN*, *_KEY (case-insensitive).
var credentialName = regexp.MustCompile(`(?i)(PASSWORD|SECRET|TOKEN|PASSWD|_KEY$|^KEY$)`)

// CredentialEnvWarnings returns a warning for every plain env var whose name
// looks like a credential, sorted: its value sits in the event log for good,
// where a secret's does not.
func CredentialEnvWarnings(env map[string]string) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if credentialName.MatchString(name) {
			out = append(out, "env_vars."+name+" looks like a credential: plain env vars are kept in the event log and backups for good; "+
				"store it as a secret (sless secret set) and reference it with secrets: {"+name+": <secret name>}")
		}
	}
	return out
}
