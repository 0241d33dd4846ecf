package resources

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/runtimes"
)

// runAsID is the user and group of function containers; the runtime images
// create this user (runtimes/*/Dockerfile).
const runAsID = 10001

// functionCPURequest is what a function container asks for: no CPU limit,
// since throttling a request handler hurts more than sharing a core.
const functionCPURequest = "50m"

// tmpSize bounds the writable /tmp of a function (the root fs is read-only).
const tmpSize = "64Mi"

// objectLabels returns the labels of an object of a function, sorted by the caller's use.
func objectLabels(component, function string, extra ...string) map[string]string {
	l := map[string]string{LabelManagedBy: ManagedBy, LabelComponent: component, LabelFunction: function}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

// functionPod is the pod spec shared by servers, runs and cron runs: the
// Pod Security "restricted" profile, no service account token, no service
// links, a read-only root fs with a small /tmp. The namespace secrets the
// version uses come from the Secret named secret (see secrets.go).
func functionPod(w driver.Workload, restart corev1.RestartPolicy, env []envVar, secret string) *corev1ac.PodSpecApplyConfiguration {
	pod := corev1ac.PodSpec().
		WithRestartPolicy(restart).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithTerminationGracePeriodSeconds(30).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(runAsID).
			WithRunAsGroup(runAsID).
			WithFSGroup(runAsID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithVolumes(corev1ac.Volume().WithName("tmp").
			WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(resource.MustParse(tmpSize)))).
		WithContainers(functionContainer(w, sortEnv(append(env, versionSecretEnv(w, secret)...))))
	withSecretFiles(pod, w, secret)
	return pod
}

// functionContainer runs the version's image with the platform's variables
// as env and the user's from the version's Secret.
func functionContainer(w driver.Workload, env []envVar) *corev1ac.ContainerApplyConfiguration {
	mem := resource.MustParse(strconv.Itoa(memoryMB(w.Config)) + "Mi")
	c := corev1ac.Container().
		WithName(ContainerName).
		WithImage(w.Image).
		WithImagePullPolicy(corev1.PullIfNotPresent).
		WithEnv(envApply(env)...).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceMemory: mem, corev1.ResourceCPU: resource.MustParse(functionCPURequest)}).
			WithLimits(corev1.ResourceList{corev1.ResourceMemory: mem})).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(runtimes.Describe(w.Config.Runtime).ReadOnlyRoot).
			WithRunAsNonRoot(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("tmp").WithMountPath("/tmp"))
	if len(w.Config.EnvVars) > 0 {
		c.WithEnvFrom(corev1ac.EnvFromSource().WithSecretRef(corev1ac.SecretEnvSource().WithName(EnvSecretName(w.Function, w.Config.EnvVars))))
	}
	return c
}

func memoryMB(c domain.FunctionConfig) int {
	if c.MemoryMB > 0 {
		return c.MemoryMB
	}
	return domain.DefaultMemoryMB
}

// envVar is one variable of a function container. A literal value never
// comes from the user or holds a credential; what came from the user is
// read from a Secret instead: with secret set, the value is that Secret's
// key (valueFrom.secretKeyRef), the variable's own name when key is empty,
// and value is unused.
type envVar struct{ name, value, secret, key string }

// literalEnv is a variable with a literal value.
func literalEnv(name, value string) envVar { return envVar{name: name, value: value} }

// secretKeyEnv is a variable read from the key of the same name in a Secret.
func secretKeyEnv(name, secret string) envVar { return envVar{name: name, secret: secret} }

// platformEnv returns the variables of the wrapper contract, sorted by name.
func platformEnv(w driver.Workload, extra ...envVar) []envVar {
	return sortEnv(append([]envVar{
		literalEnv(runtimes.EnvPort, strconv.Itoa(Port)),
		literalEnv(runtimes.EnvEntrypoint, w.Config.Entrypoint),
	}, extra...))
}

// sortEnv sorts variables by name, in place, and returns them.
func sortEnv(env []envVar) []envVar {
	slices.SortFunc(env, func(a, b envVar) int { return strings.Compare(a.name, b.name) })
	return env
}

// envApply turns variables into the container's env, in their order: a
// literal as value, a Secret's key as valueFrom.secretKeyRef.
func envApply(env []envVar) []*corev1ac.EnvVarApplyConfiguration {
	out := make([]*corev1ac.EnvVarApplyConfiguration, 0, len(env))
	for _, e := range env {
		v := corev1ac.EnvVar().WithName(e.name)
		if e.secret != "" {
			key := e.key
			if key == "" {
				key = e.name
			}
			v.WithValueFrom(corev1ac.EnvVarSource().WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(e.secret).WithKey(key)))
		} else {
			v.WithValue(e.value)
		}
		out = append(out, v)
	}
	return out
}

// EnvSecret returns the immutable Secret with a version's environment
// variables, or nil when it has none.
func EnvSecret(w driver.Workload) *corev1ac.SecretApplyConfiguration {
	if len(w.Config.EnvVars) == 0 {
		return nil
	}
	data := make(map[string][]byte, len(w.Config.EnvVars))
	for k, v := range w.Config.EnvVars {
		data[k] = []byte(v)
	}
	return corev1ac.Secret(EnvSecretName(w.Function, w.Config.EnvVars), w.Namespace).
		WithLabels(objectLabels("env", w.Function)).
		WithType(corev1.SecretTypeOpaque).
		WithImmutable(true).
		WithData(data)
}

// resourceList parses a map of resource quantities; a bad one is EINVALID.
func resourceList(m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for k, v := range m {
		q, err := quantity(v)
		if err != nil {
			return nil, err
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

func quantity(s string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, domain.Errorf(domain.EINVALID, "k8sdriver: %q is not a resource quantity: %v", s, err)
	}
	return q, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
