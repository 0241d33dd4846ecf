// Package cli is the client side of the sless binary: the commands a user
// of the platform runs (sless login, sless fn ...) on top of the typed API
// client (httpapi/client).
//
// Every client command finds the API and the token the same way: the --url
// and --token flags, else SLESS_URL and SLESS_TOKEN, else the file `sless
// login` wrote ($XDG_CONFIG_HOME/sless/config.yaml, by default
// ~/.config/sless/config.yaml, mode 0600), else http://localhost:8080 and no
// token. The namespace is the token's (client.NamespaceOf): nobody types it.
//
// A call can also be queued (fn invoke --async): the command prints the
// invocation's id at once, `fn invocation NAME ID` shows its state, attempts
// and answer (--wait until it is finished), and `fn dlq ls|retry|rm` handles
// the dead letters, the calls given up. How queued calls are delivered
// (retries, age, concurrency) is the function's async configuration, set by
// the --async-* flags of fn deploy or the async block of sless.yaml.
//
// How a function scales (the instances kept running, the most at once, the
// requests one instance takes at once) is set by fn deploy's
// --min-instances, --max-instances and --concurrency or the keys of the
// same names in sless.yaml; fn get shows them and, when the server says,
// the instances running now.
//
// Credentials go into the namespace's secrets (sless secret set|ls|get|rm):
// set reads the value from a file or stdin (a prompt without echo on a
// terminal), never from an argument, which would stay in the shell's
// history; the API never returns it. fn deploy's --secret ENV=SECRET and
// --secret-file SECRET (or sless.yaml's secrets and secret_files) give a
// function secrets as environment variables and as files under
// /run/secrets, and the API's warnings about credentials in plain env vars
// are printed to stderr.
//
// Errors say what to do next: a rejected token how to get one, a refused
// connection the URL tried and how to start `sless dev`, a missing function
// the command that lists them.
package cli
