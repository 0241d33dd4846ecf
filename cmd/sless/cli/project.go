package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/slessio/sless/domain"
)

// ProjectFile is the file in a function's directory that says how to deploy
// it, so that `sless fn deploy DIR` needs no flags (flags override it):
//
//	name: hello                # default: the directory's name
//	runtime: python3.11        # python3.11, nodejs20 or go1.23
//	entrypoint: handler.handle # default: the runtime's
//	memory: 128                # MiB, 64-4096
//	timeout: 30                # seconds, 1-900
//	env:                       # environment variables
//	  GREETING: hi
//	triggers:
//	  http: true               # a public URL (trigger NAME-http)
//	  cron: "*/5 * * * *"      # a schedule in UTC (trigger NAME-cron)
//	async:                     # calls queued with fn invoke --async
//	  max_retries: 2           # retries after a failed first attempt, 0-10
//	  max_event_age: 21600     # seconds before one is given up, 60-21600
//	  max_concurrency: 0       # deliveries at once (0: no bound of their own)
//	min_instances: 0           # instances kept running, 0-1000 (0: scale to zero when idle)
//	max_instances: 0           # most instances at once, 0-1000 (0: the platform's default)
//	concurrency: 0             # requests one instance takes at once, 0-1000 (0: the runtime's default)
//	secrets:                   # env vars taking the value of a namespace secret (sless secret set)
//	  DB_PASSWORD: db-password
//	secret_files: [tls-key]    # secrets read as files, /run/secrets/<name>
//
// It is checked with the API's rules; an error names the file, the line and
// the field.
const ProjectFile = "sless.yaml"

// project is a parsed ProjectFile.
type project struct {
	Name       string            `yaml:"name"`
	Runtime    string            `yaml:"runtime"`
	Entrypoint string            `yaml:"entrypoint"`
	Memory     int               `yaml:"memory"`
	Timeout    int               `yaml:"timeout"`
	Env        map[string]string `yaml:"env"`
	Triggers   struct {
		HTTP bool   `yaml:"http"`
		Cron string `yaml:"cron"`
	} `yaml:"triggers"`
	Async struct {
		MaxRetries     int `yaml:"max_retries"`
		MaxEventAge    int `yaml:"max_event_age"`
		MaxConcurrency int `yaml:"max_concurrency"`
	} `yaml:"async"`
	MinInstances int               `yaml:"min_instances"`
	MaxInstances int               `yaml:"max_instances"`
	Concurrency  int               `yaml:"concurrency"`
	Secrets      map[string]string `yaml:"secrets"`
	SecretFiles  []string          `yaml:"secret_files"`
	// set holds the fields the file sets, with their lines.
	set map[string]int
}

// loadProject reads dir's ProjectFile; nil when there is none.
func loadProject(dir string) (*project, error) {
	path := filepath.Join(dir, ProjectFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	p := &project{set: map[string]int{}}
	if len(bytes.TrimSpace(data)) == 0 {
		return p, nil
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err == nil && len(root.Content) == 1 {
		walk(root.Content[0], "", p.set)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(p); err != nil {
		return nil, yamlError(path, err, p.set)
	}
	return p, p.validate(path)
}

// yamlError says what is wrong with the file in its terms: "sless.yaml:5:
// unknown field "timeot" (did you mean "timeout"?)", never the parser's Go
// types.
func yamlError(path string, err error, keys map[string]int) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			return fmt.Errorf("%s:%s: %s", path, m[1], m[2])
		}
		return fmt.Errorf("%s: %s", path, msg)
	}
	var lines []string
	for _, e := range te.Errors {
		m := yamlLine.FindStringSubmatch(e)
		if m == nil {
			lines = append(lines, fmt.Sprintf("%s: %s", path, e))
			continue
		}
		line, msg := m[1], m[2]
		if f := unknownField.FindStringSubmatch(msg); f != nil {
			msg = fmt.Sprintf("unknown field %q", f[1])
			if near := domain.Suggest(f[1], projectKeys); near != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", near)
			}
		} else if t := cannotDecode.FindStringSubmatch(msg); t != nil {
			got := map[string]string{"seq": "a list", "map": "a mapping"}[t[1]]
			if t[2] != "" || got == "" {
				got = strconv.Quote(t[2])
			}
			msg = fmt.Sprintf("%s is not %s", got, kindWords(t[3]))
			for key, at := range keys {
				if strconv.Itoa(at) == line {
					msg = key + ": " + msg
				}
			}
		}
		lines = append(lines, fmt.Sprintf("%s:%s: %s", path, line, msg))
	}
	return errors.New(strings.Join(lines, "\n"))
}

var (
	yamlLine     = regexp.MustCompile(`^line (\d+): (.*)$`)
	unknownField = regexp.MustCompile(`^field (\S+) not found in type `)
	cannotDecode = regexp.MustCompile("^cannot unmarshal !!(\\w+) (?:`([^`]*)` )?into (\\S+)")
)

// kindWords names the kind of value a Go type of project takes, for people.
func kindWords(goType string) string {
	switch {
	case goType == "int":
		return "a whole number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "a text"
	case strings.HasPrefix(goType, "map["):
		return "a mapping of names to values"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	default:
		return "a mapping"
	}
}

// projectKeys are the keys a ProjectFile may have, at any level.
var projectKeys = []string{"name", "runtime", "entrypoint", "memory", "timeout", "env", "triggers", "http", "cron",
	"async", "max_retries", "max_event_age", "max_concurrency", "min_instances", "max_instances", "concurrency",
	"secrets", "secret_files"}

// walk records the line of every key of a mapping, by dotted path.
func walk(n *yaml.Node, prefix string, lines map[string]int) {
	if n.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key := prefix + n.Content[i].Value
		lines[key] = n.Content[i].Line
		walk(n.Content[i+1], key+".", lines)
	}
}

// validate checks the file with the API's rules.
func (p *project) validate(path string) error {
	fail := func(field string, err error) error {
		return fmt.Errorf("%s:%d: %s: %s", path, p.set[field], field, messageOf(err))
	}
	if _, ok := p.set["name"]; ok {
		if err := domain.ValidateName("name", p.Name); err != nil {
			return fail("name", err)
		}
	}
	if _, ok := p.set["runtime"]; ok {
		rt, err := domain.ParseRuntime(p.Runtime)
		if err != nil {
			return fail("runtime", err)
		}
		if _, ok := p.set["entrypoint"]; ok {
			if err := domain.ValidateEntrypoint(rt, p.Entrypoint); err != nil {
				return fail("entrypoint", err)
			}
		}
	}
	if _, ok := p.set["memory"]; ok && (p.Memory < domain.MinMemoryMB || p.Memory > domain.MaxMemoryMB) {
		return fail("memory", fmt.Errorf("must be between %d and %d (MiB), not %d", domain.MinMemoryMB, domain.MaxMemoryMB, p.Memory))
	}
	if _, ok := p.set["timeout"]; ok && (p.Timeout < domain.MinTimeoutSec || p.Timeout > domain.MaxTimeoutSec) {
		return fail("timeout", fmt.Errorf("must be between %d and %d (seconds), not %d", domain.MinTimeoutSec, domain.MaxTimeoutSec, p.Timeout))
	}
	if err := domain.ValidateEnvVars(p.Env); err != nil {
		return fail("env", err)
	}
	if _, ok := p.set["triggers.cron"]; ok {
		if _, err := domain.ParseCron(p.Triggers.Cron); err != nil {
			return fail("triggers.cron", err)
		}
	}
	for _, r := range []struct {
		field    string
		v        int
		min, max int
		unit     string
	}{
		{"async.max_retries", p.Async.MaxRetries, 0, domain.MaxAsyncMaxRetries, "retries"},
		{"async.max_event_age", p.Async.MaxEventAge, domain.MinAsyncMaxEventAgeSec, domain.MaxAsyncMaxEventAgeSec, "seconds"},
		{"async.max_concurrency", p.Async.MaxConcurrency, 0, domain.MaxConcurrency, "deliveries at once; 0: no bound of their own"},
	} {
		if _, ok := p.set[r.field]; ok && (r.v < r.min || r.v > r.max) {
			return fail(r.field, fmt.Errorf("must be between %d and %d (%s), not %d", r.min, r.max, r.unit, r.v))
		}
	}
	if de := secretsError(p.Env, p.Secrets, p.SecretFiles); de != nil {
		return fail(de.Field, de)
	}
	var de *domain.Error
	if err := scaleError(domain.ScaleConfig{MinInstances: p.MinInstances, MaxInstances: p.MaxInstances, Concurrency: p.Concurrency}); errors.As(err, &de) {
		return fail(de.Field, err)
	}
	return nil
}

// scaleError is what the API says of a function's scaling: nil, or
// EINVALID naming the field (min_instances, max_instances, concurrency),
// by the domain's own rules, which FunctionSpec.Config applies (every other
// field of the spec takes its valid default).
func scaleError(s domain.ScaleConfig) error {
	_, err := domain.FunctionSpec{Runtime: string(domain.Runtimes[0]), Scale: s}.Config()
	return err
}

// apply fills the deploy flags the command line left unset from p.
func (p *project) apply(f *deployFlags, changed func(string) bool, env, secretEnv *map[string]string) {
	if p == nil {
		return
	}
	str := func(flag, field string, dst *string, v string) {
		if _, ok := p.set[field]; ok && !changed(flag) {
			*dst = v
		}
	}
	str("name", "name", &f.name, p.Name)
	str("runtime", "runtime", &f.runtime, p.Runtime)
	str("entrypoint", "entrypoint", &f.entrypoint, p.Entrypoint)
	str("cron", "triggers.cron", &f.cron, p.Triggers.Cron)
	if _, ok := p.set["memory"]; ok && !changed("memory") {
		f.memory = p.Memory
	}
	if _, ok := p.set["timeout"]; ok && !changed("timeout") {
		f.timeout = p.Timeout
	}
	if _, ok := p.set["triggers.http"]; ok && !changed("http") {
		f.http = p.Triggers.HTTP
	}
	if _, ok := p.set["env"]; ok && !changed("env") {
		*env = p.Env
	}
	// Set to nothing (secrets: with no value), they clear the function's:
	// never null, which an update takes as "keep".
	if p.sets("secret") && !changed("secret") {
		*secretEnv = map[string]string{}
		maps.Copy(*secretEnv, p.Secrets)
	}
	if p.sets("secret-file") && !changed("secret-file") {
		f.secretFiles = append([]string{}, p.SecretFiles...)
	}
	for _, a := range []struct {
		flag string
		dst  *int
		v    int
	}{
		{"async-max-retries", &f.asyncRetries, p.Async.MaxRetries},
		{"async-max-event-age", &f.asyncAge, p.Async.MaxEventAge},
		{"async-max-concurrency", &f.asyncConcurrency, p.Async.MaxConcurrency},
		{"min-instances", &f.minInstances, p.MinInstances},
		{"max-instances", &f.maxInstances, p.MaxInstances},
		{"concurrency", &f.concurrency, p.Concurrency},
	} {
		if p.sets(a.flag) && !changed(a.flag) {
			*a.dst = a.v
		}
	}
}

// sets reports whether p sets the field a flag stands for.
func (p *project) sets(flag string) bool {
	if p == nil {
		return false
	}
	field := flagFields[flag]
	if field == "" {
		field = flag
	}
	_, ok := p.set[field]
	return ok
}

// flagFields are the fields of a ProjectFile whose deploy flag has another name.
var flagFields = map[string]string{"http": "triggers.http", "cron": "triggers.cron", "async-max-retries": "async.max_retries",
	"async-max-event-age": "async.max_event_age", "async-max-concurrency": "async.max_concurrency",
	"min-instances": "min_instances", "max-instances": "max_instances", "secret": "secrets", "secret-file": "secret_files"}
