package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/slessio/sless/domain"
)

// scaffold is what `sless fn init` writes for one runtime: the handler's
// file and its text.
type scaffold struct{ file, code string }

var scaffolds = map[domain.Runtime]scaffold{
	domain.RuntimePython311: {"handler.py", `def handle(event):
    """event is the JSON body of an HTTP request (plus _method, _path, _query,
    _headers), or the event of a job or a cron trigger."""
    name = event.get("name", "world")
    print("greeting", name)  # goes to the invocation log: sless fn logs
    return {"hello": name}
`},
	domain.RuntimeNodeJS20: {"index.js", `// event is the JSON body of an HTTP request (plus _method, _path, _query,
// _headers), or the event of a job or a cron trigger.
exports.handle = async (event) => {
  const name = event.name || "world";
  console.log("greeting", name); // goes to the invocation log: sless fn logs
  return { hello: name };
};
`},
	domain.RuntimeGo123: {"handler.go", `package main

import (
	"context"
	"log"
)

// Handle gets the JSON body of an HTTP request (plus _method, _path, _query,
// _headers), or the event of a job or a cron trigger.
func Handle(ctx context.Context, event map[string]any) (any, error) {
	name, _ := event["name"].(string)
	if name == "" {
		name = "world"
	}
	log.Println("greeting", name) // goes to the invocation log: sless fn logs
	return map[string]string{"hello": name}, nil
}
`},
}

func initCommand() *cobra.Command {
	var runtime, name string
	cmd := &cobra.Command{
		Use:   "init DIR --runtime R",
		Short: "Scaffold a working function: a handler, a " + ProjectFile + " and a " + IgnoreFile,
		Long: `Write a working function into DIR (created; it must be empty): the handler in
the runtime's shape, a ` + ProjectFile + ` that lets "sless fn deploy DIR" run without flags,
and a ` + IgnoreFile + ` (gitignore syntax) of what not to upload.`,
		Example: "  sless fn init hello --runtime python3.11 && sless fn deploy hello && sless fn invoke hello",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, err := domain.ParseRuntime(runtime)
			if err != nil {
				return fmt.Errorf("--runtime: %s", messageOf(err))
			}
			dir := args[0]
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			if name == "" {
				name = filepath.Base(abs)
			}
			if err := domain.ValidateName("name", name); err != nil {
				return fmt.Errorf("the function's name %q: %s (choose one with --name)", name, messageOf(err))
			}
			if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
				return fmt.Errorf("%s is not empty: give a new directory", dir)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			sc := scaffolds[rt]
			project := fmt.Sprintf(`# How "sless fn deploy %s" deploys this function (flags override it).
name: %s
runtime: %s
entrypoint: %s
memory: %d      # MiB
timeout: %d      # seconds
env:
  GREETING: hello
triggers:
  http: true     # a public URL
  # cron: "*/5 * * * *"   # a schedule in UTC
# async:         # calls queued with sless fn invoke --async
#   max_retries: 2          # retries after a failed first attempt
#   max_event_age: 21600    # seconds before one is given up to the dead letters
# min_instances: 1          # instances kept running (default 0: scale to zero when idle)
# max_instances: 10         # most instances at once (default 0: the platform's)
# concurrency: %-13d# requests one instance takes at once (default 0: the runtime's, %d)
`, dir, name, rt, domain.DefaultEntrypoint(rt), domain.DefaultMemoryMB, domain.DefaultTimeoutSec,
				domain.DefaultConcurrency(rt), domain.DefaultConcurrency(rt))
			ignore := "# Files not uploaded by sless fn deploy (gitignore syntax).\n.git/\nnode_modules/\n__pycache__/\n*.pyc\n.env\n"
			for file, text := range map[string]string{sc.file: sc.code, ProjectFile: project, IgnoreFile: ignore} {
				if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Wrote %s, %s and %s in %s. Deploy it with: sless fn deploy %s\n", sc.file, ProjectFile, IgnoreFile, dir, dir)
			return nil
		},
	}
	cmd.Flags().StringVar(&runtime, "runtime", "", "runtime: "+runtimeNames()+" (required)")
	cmd.Flags().StringVar(&name, "name", "", "the function's name (default: the directory's name)")
	_ = cmd.MarkFlagRequired("runtime")
	return cmd
}
