package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	gitignore "github.com/sabhiram/go-gitignore"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi"
	"github.com/slessio/sless/httpapi/client"
	"github.com/slessio/sless/store/codestore"
)

// IgnoreFile names the files of a function's directory that deploy leaves
// out of the zip, in gitignore syntax.
const IgnoreFile = ".slessignore"

// maxZipBytes is the API's default limit of an upload (SPEC §2).
const maxZipBytes = httpapi.DefaultMaxUploadBytes

// deployFlags are the flags of `sless fn deploy`.
type deployFlags struct {
	name, runtime, entrypoint string
	memory, timeout           int
	env                       []string
	// The namespace secrets the function uses: ENV=SECRET pairs and the
	// secrets it reads as files.
	secrets, secretFiles []string
	http                 bool
	cron                 string
	noWait, quiet        bool
	wait                 time.Duration
	// The function's async configuration (client.AsyncConfig).
	asyncRetries, asyncAge, asyncConcurrency int
	// How the function scales (min_instances, max_instances, concurrency).
	minInstances, maxInstances, concurrency int
}

func deployCommand(c *conn) *cobra.Command {
	var f deployFlags
	cmd := &cobra.Command{
		Use:   "deploy DIR",
		Short: "Zip a directory, create or update the function, upload it and follow the build",
		Long: `Zip DIR (deterministically, leaving out what ` + IgnoreFile + ` lists in gitignore
syntax), create the function or update its configuration, upload the code, and
follow the build until the new version serves: a spinner on a terminal, plain
lines otherwise. On a failed build the build log is printed and the exit status
is 1. --http and --cron make the function's triggers (NAME-http, NAME-cron).
The --async flags say how queued calls (fn invoke --async) are delivered: the
retries after a failed first attempt, how old a call may get before it is given
up to the dead letters, and how many deliveries run at once. --min-instances,
--max-instances and --concurrency say how the function scales: the instances
kept running (0 scales to zero when idle), the most at once, and the requests
one instance takes at once. Like the async configuration they belong to the
function, not to a version: a rollback keeps them. --secret and --secret-file
give the function namespace secrets (sless secret set) as environment variables
and as files under /run/secrets; keep credentials there rather than in --env,
whose values stay in the platform's event log (the API warns about names that
look like credentials). A flag left out keeps the function's value (the
default, when it is created).`,
		Example: `  sless fn deploy ./hello --runtime python3.11 --http
  sless fn deploy ./report --name report --runtime nodejs20 --env REGION=eu --cron "*/5 * * * *"
  sless fn deploy ./report --async-max-retries 5 --async-max-event-age 3600 --async-max-concurrency 2
  sless fn deploy ./hello --min-instances 1 --max-instances 20 --concurrency 4
  sless fn deploy ./api --secret DB_PASSWORD=db-password --secret-file tls-key`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return deploy(cmd.Context(), c, args[0], f, cmd.Flags().Changed, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.name, "name", "", "function name (default: the directory's name)")
	fl.StringVar(&f.runtime, "runtime", "", "runtime: "+runtimeNames()+" (required to create)")
	fl.StringVar(&f.entrypoint, "entrypoint", "", "what the runtime calls (default: the runtime's, e.g. handler.handle)")
	fl.IntVar(&f.memory, "memory", domain.DefaultMemoryMB, "memory limit in MiB")
	fl.IntVar(&f.timeout, "timeout", domain.DefaultTimeoutSec, "time limit of one invocation in seconds")
	fl.StringArrayVar(&f.env, "env", nil, "environment variable K=V (repeatable); replaces all of them when given")
	fl.StringArrayVar(&f.secrets, "secret", nil, "environment variable ENV=SECRET taking the value of a namespace secret (repeatable); replaces all of them when given, --secret '' removes them")
	fl.StringArrayVar(&f.secretFiles, "secret-file", nil, "namespace secret the function reads as the file /run/secrets/SECRET (repeatable); replaces all of them when given, --secret-file '' removes them")
	fl.BoolVar(&f.http, "http", false, "serve the function at a public URL (an http trigger NAME-http)")
	fl.StringVar(&f.cron, "cron", "", "run the function on a cron schedule in UTC (a trigger NAME-cron), e.g. \"*/5 * * * *\"")
	fl.IntVar(&f.asyncRetries, "async-max-retries", domain.DefaultAsyncMaxRetries,
		fmt.Sprintf("queued calls: retries after a failed first attempt (0-%d)", domain.MaxAsyncMaxRetries))
	fl.IntVar(&f.asyncAge, "async-max-event-age", domain.DefaultAsyncMaxEventAgeSec,
		fmt.Sprintf("queued calls: seconds after which one is given up to the dead letters (%d-%d)", domain.MinAsyncMaxEventAgeSec, domain.MaxAsyncMaxEventAgeSec))
	fl.IntVar(&f.asyncConcurrency, "async-max-concurrency", 0, "queued calls: deliveries at once (0: no bound of their own)")
	fl.IntVar(&f.minInstances, "min-instances", 0,
		fmt.Sprintf("instances kept running, never idled out (0-%d; 0: scale to zero when idle)", domain.MaxInstances))
	fl.IntVar(&f.maxInstances, "max-instances", 0,
		fmt.Sprintf("most instances at once (0-%d; 0: the platform's default)", domain.MaxInstances))
	fl.IntVar(&f.concurrency, "concurrency", 0,
		fmt.Sprintf("requests one instance takes at once (0-%d; 0: the runtime's default, %s)", domain.MaxInstanceConcurrency, runtimeConcurrencies()))
	fl.BoolVar(&f.noWait, "no-wait", false, "return once the code is uploaded, without following the build")
	fl.BoolVar(&f.quiet, "quiet", false, "follow the build without printing its output as it comes")
	fl.DurationVar(&f.wait, "wait", 10*time.Minute, "how long to follow the build before giving up")
	return cmd
}

// runtimeNames lists the runtimes for help texts.
func runtimeNames() string {
	var s []string
	for _, r := range domain.Runtimes {
		s = append(s, string(r))
	}
	return strings.Join(s, ", ")
}

// runtimeConcurrencies lists the default concurrency of every runtime for
// help texts: "1 for python3.11, 1 for nodejs20, 16 for go1.23".
func runtimeConcurrencies() string {
	var s []string
	for _, r := range domain.Runtimes {
		s = append(s, fmt.Sprintf("%d for %s", domain.DefaultConcurrency(r), r))
	}
	return strings.Join(s, ", ")
}

func deploy(ctx context.Context, c *conn, dir string, f deployFlags, changed func(string) bool, stdout, stderr io.Writer) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	env, err := parseEnv(f.env)
	if err != nil {
		return err
	}
	secretEnv, err := parseSecrets(f.secrets)
	if err != nil {
		return err
	}
	proj, err := loadProject(abs)
	if err != nil {
		return err
	}
	proj.apply(&f, changed, &env, &secretEnv)
	secretFiles := secretFileNames(f.secretFiles)
	if de := secretsError(env, secretEnv, secretFiles); de != nil {
		flag := "--secret"
		if de.Field == "secret_files" {
			flag = "--secret-file"
		}
		return fmt.Errorf("%s: %s", flag, messageOf(de))
	}
	flagChanged := changed
	changed = func(flag string) bool { return flagChanged(flag) || proj.sets(flag) }
	if f.name == "" {
		f.name = filepath.Base(abs)
	}
	if err := domain.ValidateName("name", f.name); err != nil {
		return fmt.Errorf("--name %s: %s (name it with --name)", f.name, messageOf(err))
	}
	if f.cron != "" {
		if _, err := domain.ParseCron(f.cron); err != nil {
			return fmt.Errorf("--cron %q: %s", f.cron, messageOf(err))
		}
	}
	zip, err := zipFunction(abs)
	if err != nil {
		return err
	}
	cl, url, err := c.client()
	if err != nil {
		return err
	}

	// Create the function, or update what the flags set.
	fn, err := cl.GetFunction(ctx, f.name)
	switch {
	case client.IsNotFound(err):
		if f.runtime == "" {
			return fmt.Errorf("function %q does not exist yet: say its --runtime (%s)", f.name, runtimeNames())
		}
		fn, err = cl.CreateFunction(ctx, client.CreateFunctionRequest{Name: f.name, Runtime: f.runtime, Entrypoint: f.entrypoint,
			MemoryMB: f.memory, TimeoutSec: f.timeout, EnvVars: env, Async: asyncPatch(f, changed),
			MinInstances: f.minInstances, MaxInstances: f.maxInstances, Concurrency: f.concurrency,
			Secrets: secretEnv, SecretFiles: secretFiles})
		if err != nil {
			return explain(err, url, "", "")
		}
		fmt.Fprintf(stdout, "Created function %s (%s).\n", fn.Name, fn.Runtime)
		warn(stderr, fn.Warnings)
	case err != nil:
		return explain(err, url, "", "")
	default:
		var req client.UpdateFunctionRequest
		if changed("runtime") {
			req.Runtime = &f.runtime
		}
		if changed("entrypoint") {
			req.Entrypoint = &f.entrypoint
		}
		if changed("memory") {
			req.MemoryMB = &f.memory
		}
		if changed("timeout") {
			req.TimeoutSec = &f.timeout
		}
		if changed("env") {
			req.EnvVars = &env
		}
		if changed("min-instances") {
			req.MinInstances = &f.minInstances
		}
		if changed("max-instances") {
			req.MaxInstances = &f.maxInstances
		}
		if changed("concurrency") {
			req.Concurrency = &f.concurrency
		}
		if changed("secret") {
			req.Secrets = &secretEnv
		}
		if changed("secret-file") {
			req.SecretFiles = &secretFiles
		}
		req.Async = asyncPatch(f, changed)
		if req != (client.UpdateFunctionRequest{}) {
			if fn, err = cl.UpdateFunction(ctx, f.name, req); err != nil {
				return explain(err, url, "", "")
			}
			warn(stderr, fn.Warnings)
		}
	}

	up, err := cl.Upload(ctx, f.name, zip)
	if err != nil {
		return explain(err, url, "", "")
	}
	v := up.Version.Version
	switch a := up.Version.Activation; {
	case up.Queued:
		fmt.Fprintf(stdout, "Uploaded %s (%d KiB): version %d, build queued.\n", dir, (len(zip)+1023)/1024, v)
	case a != nil:
		fmt.Fprintf(stdout, "Uploaded %s: the code of version %d, active again (was version %d).\n", dir, v, a.FromVersion)
	case up.Version.Active:
		fmt.Fprintf(stdout, "Uploaded %s: unchanged, version %d is active.\n", dir, v)
	default:
		fmt.Fprintf(stdout, "Uploaded %s: unchanged, version %d (%s).\n", dir, v, strings.ToLower(string(up.Version.BuildStatus)))
	}
	httpURL, err := ensureTriggers(ctx, cl, f)
	if err != nil {
		return explain(err, url, "", "")
	}
	if f.noWait {
		fmt.Fprintf(stdout, "Not waiting for the build: follow it with `sless fn get %s`.\n", f.name)
		return nil
	}

	wctx, cancel := context.WithTimeoutCause(ctx, f.wait, fmt.Errorf("gave up after --wait %s", f.wait))
	defer cancel()
	follow := newFollower(stderr, f.name, v, f.quiet)
	fn, err = cl.WaitServing(wctx, f.name, v, 250*time.Millisecond, follow.update)
	follow.done()
	var be *client.BuildError
	if errors.As(err, &be) {
		if strings.TrimSpace(be.Log) == "" {
			return fmt.Errorf("the build of version %d of %s failed: %s", v, f.name, be.Message)
		}
		fmt.Fprintf(stderr, "Build log of version %d:\n%s\n", v, strings.TrimRight(be.Log, "\n"))
		return fmt.Errorf("the build of version %d of %s failed: %s\n(the whole log is above)", v, f.name, buildSummary(be.Message))
	}
	if err != nil {
		return explain(err, url, "", "")
	}
	fmt.Fprintf(stdout, "Function %s version %d is %s.\n", fn.Name, fn.ActiveVersion, colour(stdout, string(fn.Phase)))
	if httpURL != "" {
		fmt.Fprintf(stdout, "URL: %s\n", httpURL)
	}
	return nil
}

// asyncPatch is the async configuration the flags (or the project file)
// set; nil when they set none.
func asyncPatch(f deployFlags, changed func(string) bool) *client.AsyncPatch {
	var p client.AsyncPatch
	if changed("async-max-retries") {
		p.MaxRetries = &f.asyncRetries
	}
	if changed("async-max-event-age") {
		p.MaxEventAgeSec = &f.asyncAge
	}
	if changed("async-max-concurrency") {
		p.MaxConcurrency = &f.asyncConcurrency
	}
	if p == (client.AsyncPatch{}) {
		return nil
	}
	return &p
}

// parseEnv reads K=V pairs.
func parseEnv(kvs []string) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: write it as KEY=VALUE", kv)
		}
		env[k] = v
	}
	if err := domain.ValidateEnvVars(env); err != nil {
		return nil, fmt.Errorf("--env: %s", messageOf(err))
	}
	return env, nil
}

// parseSecrets reads ENV=SECRET pairs; a single empty one is none.
func parseSecrets(pairs []string) (map[string]string, error) {
	out := map[string]string{}
	if len(pairs) == 1 && pairs[0] == "" {
		return out, nil
	}
	for _, p := range pairs {
		env, secret, ok := strings.Cut(p, "=")
		if !ok || env == "" || secret == "" {
			return nil, fmt.Errorf("--secret %q: write it as ENV=SECRET, the variable's name and the secret's (sless secret ls)", p)
		}
		out[env] = secret
	}
	return out, nil
}

// secretFileNames are the names --secret-file gives; a single empty one is none.
func secretFileNames(names []string) []string {
	if len(names) == 1 && names[0] == "" {
		return []string{}
	}
	return names
}

// secretsError is what the API says of the secrets a function is given:
// nil, or EINVALID naming the field (secrets, secrets.ENV, secret_files), by
// the domain's own rules, which FunctionSpec.Config applies (variable and
// secret names, a variable also in env, a secret named twice). Whether the
// secrets exist only the server knows.
func secretsError(env, secretEnv map[string]string, files []string) *domain.Error {
	_, err := domain.FunctionSpec{Runtime: string(domain.Runtimes[0]), EnvVars: env, Secrets: secretEnv, SecretFiles: files}.Config()
	var de *domain.Error
	if errors.As(err, &de) && de.Code == domain.EINVALID {
		return de
	}
	return nil
}

// warn prints the API's warnings about a function's configuration.
func warn(stderr io.Writer, warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
}

// zipFunction zips dir as deploy uploads it: without what .slessignore
// lists (nor that file, sless.yaml or .git), and no larger than the API takes.
func zipFunction(dir string) ([]byte, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: no such directory (give the directory of the function's code)", dir)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("%s is not a directory (give the directory of the function's code)", dir)
	}
	ignore := gitignore.CompileIgnoreLines()
	if lines, err := os.ReadFile(filepath.Join(dir, IgnoreFile)); err == nil {
		ignore = gitignore.CompileIgnoreLines(strings.Split(string(lines), "\n")...)
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	skip := func(rel string, isDir bool) bool {
		if rel == IgnoreFile || rel == ProjectFile || rel == ".git" {
			return true
		}
		return ignore.MatchesPath(rel) || isDir && ignore.MatchesPath(rel+"/")
	}
	zip, err := codestore.ZipDir(dir, skip)
	if err != nil {
		return nil, err
	}
	if len(zip) > maxZipBytes {
		return nil, fmt.Errorf("the zip of %s is %.1f MiB, over the API's limit of %d MiB: leave files out with %s",
			dir, float64(len(zip))/(1<<20), maxZipBytes>>20, IgnoreFile)
	}
	return zip, nil
}

// ensureTriggers makes the triggers --http and --cron ask for (flags that
// name their types on purpose, as trigger create's shorthands do) and
// returns the function's http URL, if it has one.
func ensureTriggers(ctx context.Context, cl *client.Client, f deployFlags) (string, error) {
	url := ""
	if f.http {
		t, err := cl.GetTrigger(ctx, f.name+"-http")
		switch {
		case client.IsNotFound(err):
			t, err = cl.CreateTrigger(ctx, client.CreateTriggerRequest{Name: f.name + "-http", Type: domain.TriggerHTTP, Function: f.name})
		case err == nil && !t.Enabled:
			t, err = cl.SetTriggerEnabled(ctx, t.Name, true)
		}
		if err != nil {
			return "", err
		}
		url = t.URL
	}
	if f.cron != "" {
		t, err := cl.GetTrigger(ctx, f.name+"-cron")
		if err == nil && t.Schedule != strings.TrimSpace(f.cron) { // the server stores it trimmed
			err = cl.DeleteTrigger(ctx, t.Name) // the schedule cannot change in place
			if err == nil {
				err = &client.Error{Status: 404, Code: client.CodeNotFound}
			}
		}
		if client.IsNotFound(err) {
			_, err = cl.CreateTrigger(ctx, client.CreateTriggerRequest{Name: f.name + "-cron", Type: domain.TriggerCron, Function: f.name, Schedule: f.cron})
		}
		if err != nil {
			return "", err
		}
	}
	if url == "" {
		trs, err := cl.ListTriggers(ctx, f.name)
		if err != nil {
			return "", err
		}
		for _, t := range trs {
			if info, _ := t.Type.Info(); info.Workload && t.Enabled { // served at the function's URL
				url = t.URL
			}
		}
	}
	return url, nil
}

// follower shows a build as it goes: a spinner line with the phase and the
// elapsed time on a terminal, a plain line per change otherwise.
type follower struct {
	w       io.Writer
	bar     *progressbar.ProgressBar
	last    string
	start   time.Time
	name    string
	version int
	quiet   bool // no build output
	shown   int  // bytes of the build's output printed
}

func newFollower(w io.Writer, name string, v int, quiet bool) *follower {
	fo := &follower{w: w, start: time.Now(), name: name, version: v, quiet: quiet}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fo.bar = progressbar.NewOptions(-1, progressbar.OptionSetWriter(w), progressbar.OptionSpinnerType(14),
			progressbar.OptionSetElapsedTime(true), progressbar.OptionClearOnFinish(),
			progressbar.OptionEnableColorCodes(false), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetDescription(fmt.Sprintf("%s v%d: queued", name, v)))
	}
	return fo
}

// update takes one answer of the wait.
func (fo *follower) update(fn *client.Function, v *client.Version) {
	state := fmt.Sprintf("build %s, function %s", v.BuildStatus, fn.Phase)
	if v.BuildStatus == domain.BuildStatusSucceeded && fn.ServingVersion != fo.version && fn.Phase != domain.PhaseFailed {
		state = "built, rolling out"
	}
	fo.output(v)
	if fo.bar != nil {
		fo.bar.Describe(fmt.Sprintf("%s v%d: %s", fo.name, fo.version, state))
		_ = fo.bar.Add(1)
		return
	}
	if state != fo.last {
		fmt.Fprintf(fo.w, "%s v%d: %s (%.1f s)\n", fo.name, fo.version, state, time.Since(fo.start).Seconds())
		fo.last = state
	}
}

// output prints the build's new output lines, dimmed on a terminal, above
// the spinner (the whole log follows a failure; the server keeps the last
// 64 KiB of a running build's output, so a very chatty build shows its end).
func (fo *follower) output(v *client.Version) {
	if fo.quiet || v.BuildLog == nil || v.BuildStatus != domain.BuildStatusBuilding {
		return
	}
	log := *v.BuildLog
	if len(log) < fo.shown { // kept from the end only: start again
		fo.shown = 0
	}
	end := strings.LastIndexByte(log, '\n') + 1 // whole lines only
	if end <= fo.shown {
		return
	}
	lines := log[fo.shown:end]
	fo.shown = end
	if fo.bar != nil {
		_ = fo.bar.Clear()
	}
	for _, l := range strings.Split(strings.TrimSuffix(lines, "\n"), "\n") {
		fmt.Fprintln(fo.w, dim(fo.w, "  "+l))
	}
}

// done ends the spinner.
func (fo *follower) done() {
	if fo.bar != nil {
		_ = fo.bar.Finish()
	}
}

// buildSummary is what a failed build's message says before the tool's own
// output, which the log above shows whole: the cause, and what to do.
func buildSummary(msg string) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(msg), "\n") {
		if strings.HasSuffix(l, " failed:") || len(lines) == 6 {
			break
		}
		lines = append(lines, l)
	}
	if len(lines) == 0 {
		return headline(msg)
	}
	return strings.Join(lines, "\n")
}

// messageOf is the people's part of a domain error.
func messageOf(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		// The caller names the flag or the file's field: not the API's
		// field name again ("--cron: schedule: ...").
		return strings.TrimPrefix(de.Message, de.Field+": ")
	}
	return err.Error()
}
