package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/slessio/sless/driver"
)

// Labels on every object the driver makes. Pods carry them too (through the
// templates), so the driver finds its pods by its own labels and never by
// labels that Kubernetes sets and may rename (job-name= is gone since 1.27).
const (
	LabelManagedBy = "app.kubernetes.io/managed-by" // always ManagedBy
	LabelComponent = "app.kubernetes.io/component"  // server, run, cron, build, env, tenant
	LabelNamespace = "sless.dev/namespace"          // the tenant namespace (build objects live elsewhere)
	LabelFunction  = "sless.dev/function"
	LabelVersion   = "sless.dev/version"
	LabelJob       = "sless.dev/job"     // a run's Job name, on the Job and its pod
	LabelTrigger   = "sless.dev/trigger" // a cron trigger's name
	LabelBuild     = "sless.dev/build"   // a build Job's name, on the Job and its pod
	ManagedBy      = "sless"
)

// Port is where function containers serve HTTP.
const Port = 8080

// HealthPath is the wrappers' readiness path.
const HealthPath = "/_sless/health"

// ContainerName is the name of the function container in every pod.
const ContainerName = "function"

// ObjectName returns the name of a function's Deployment and Service: the
// function's own name when it is a DNS-1035 label (starts with a letter), as
// Service names must be; otherwise a name derived from it.
func ObjectName(function string) string {
	if function != "" && function[0] >= 'a' && function[0] <= 'z' {
		return function
	}
	return "f" + truncate(function, 52) + "-" + shortHash(function)
}

// ServiceHost returns the DNS name of a function's Service.
func ServiceHost(namespace, function, clusterDomain string) string {
	return ObjectName(function) + "." + namespace + ".svc." + clusterDomain
}

// RunJobName returns the Job name of one run: readable, at most 49
// characters (pods add a suffix), and the same for the same run, so that a
// retried Run finds its Job.
func RunJobName(r driver.RunSpec) string {
	name := strings.Trim(truncate(sanitize(r.Name), 40), "-")
	if name == "" {
		name = "run"
	}
	return name + "-" + shortHash(r.Namespace, r.Function, r.Name, strconv.FormatInt(r.RunID, 10))
}

// CronJobName returns the CronJob name of a trigger (at most 52 characters,
// the CronJob limit).
func CronJobName(trigger string) string {
	if len(trigger) <= 52 && trigger != "" && trigger[0] >= 'a' && trigger[0] <= 'z' {
		return trigger
	}
	return "c" + truncate(trigger, 42) + "-" + shortHash(trigger)
}

// BuildJobName returns the name of the kaniko Job that builds image tag of a
// function: one Job per image, so a rerun finds the Job it started.
func BuildJobName(namespace, function, tag string) string {
	return "build-" + shortHash(namespace, function, tag) + shortHash(tag)
}

// ImageTag returns the tag of a version's image, derived from the code
// digest and everything else that changes the image (the build context, which
// names the base image, and the Go entrypoint compiled in): the same code
// builds to the same tag, so a rebuild is a no-op.
func ImageTag(b driver.BuildSpec) string {
	digest := strings.TrimPrefix(b.Digest, "sha256:")
	return truncate(sanitize(digest), 24) + "-" + shortHash(b.ContextKey, strings.Join(buildArgs(b), " "))
}

// Image returns the image reference of a version.
func Image(registry string, b driver.BuildSpec) string {
	return strings.TrimSuffix(registry, "/") + "/" + b.Namespace + "/" + b.Function + ":" + ImageTag(b)
}

// EnvSecretName returns the name of the Secret holding a version's
// environment variables: it changes with their content, so a Secret is never
// updated under running pods.
func EnvSecretName(function string, env map[string]string) string {
	parts := []string{function}
	for _, k := range sortedKeys(env) {
		parts = append(parts, k, env[k])
	}
	return ObjectName(function) + "-env-" + shortHash(parts...)
}

// shortHash is 8 bytes of sha256 over parts, in hex.
func shortHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:4])
}

// sanitize keeps lower-case letters, digits and '-'.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, s)
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
