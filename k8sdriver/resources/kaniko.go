package resources

import (
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/runtimes"
)

// Keys of the S3 credentials Secret in the build namespace.
const (
	S3AccessKeyKey = "access-key"
	S3SecretKeyKey = "secret-key"
)

// kanikoDockerDir is where kaniko reads the registry credentials from.
const kanikoDockerDir = "/kaniko/.docker"

// buildArgs returns the build arguments (NAME=value) of a build, as its
// runtime describes them: the Go runtime compiles the entrypoint into the
// image (runtimes/go1.23/Dockerfile).
func buildArgs(b driver.BuildSpec) []string {
	return runtimes.Describe(b.Config.Runtime).ImageBuildArgs(b.Config.Entrypoint)
}

// KanikoArgs returns the kaniko command line of a build, in a fixed order.
// --cache follows Config.Cache both ways, explicitly: kaniko's default must
// not decide it.
func KanikoArgs(cfg Config, b driver.BuildSpec) []string {
	cfg = cfg.WithDefaults()
	args := []string{
		"--context=s3://" + cfg.S3.Bucket + "/" + b.ContextKey,
		"--dockerfile=Dockerfile",
		"--destination=" + Image(cfg.Registry, b),
		"--cache=" + strconv.FormatBool(cfg.Cache),
	}
	if cfg.Cache && cfg.CacheRepo != "" {
		args = append(args, "--cache-repo="+cfg.CacheRepo)
	}
	for _, from := range slices.Sorted(maps.Keys(cfg.RegistryMirrors)) {
		args = append(args, "--registry-map="+from+"="+cfg.RegistryMirrors[from])
	}
	for _, r := range cfg.InsecureRegistries {
		args = append(args, "--insecure-registry="+r)
	}
	for _, ba := range buildArgs(b) {
		args = append(args, "--build-arg="+ba)
	}
	return append(args, "--push-retry=2", "--verbosity=info")
}

// KanikoJob returns the Job that builds a version's image in the build
// namespace: one pod attempt plus one retry, a deadline, resource limits, no
// service account token, the S3 credentials from a Secret by reference and
// the registry credentials as a mounted docker config.
func KanikoJob(cfg Config, b driver.BuildSpec) *batchv1ac.JobApplyConfiguration {
	cfg = cfg.WithDefaults()
	tag := ImageTag(b)
	name := BuildJobName(b.Namespace, b.Function, tag)
	l := objectLabels("build", b.Function, LabelNamespace, b.Namespace, LabelBuild, name)
	env := []*corev1ac.EnvVarApplyConfiguration{
		secretEnv("AWS_ACCESS_KEY_ID", cfg.S3.CredentialsSecret, S3AccessKeyKey),
		corev1ac.EnvVar().WithName("AWS_REGION").WithValue(cfg.S3.Region),
		secretEnv("AWS_SECRET_ACCESS_KEY", cfg.S3.CredentialsSecret, S3SecretKeyKey),
		corev1ac.EnvVar().WithName("DOCKER_CONFIG").WithValue(kanikoDockerDir),
	}
	if cfg.S3.Endpoint != "" {
		env = append(env,
			corev1ac.EnvVar().WithName("S3_ENDPOINT").WithValue(cfg.S3.Endpoint),
			corev1ac.EnvVar().WithName("S3_FORCE_PATH_STYLE").WithValue("true"))
	}
	cpu, mem := resource.MustParse(cfg.BuildCPU), resource.MustParse(cfg.BuildMemory)
	container := corev1ac.Container().
		WithName("kaniko").
		WithImage(cfg.KanikoImage).
		WithArgs(KanikoArgs(cfg, b)...).
		WithEnv(env...).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: mem}).
			WithLimits(corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem, corev1.ResourceEphemeralStorage: resource.MustParse("10Gi")})).
		// kaniko unpacks images as root inside its container; it gets the
		// default capabilities only, no privilege escalation.
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("docker-config").WithMountPath(kanikoDockerDir).WithReadOnly(true))
	pod := corev1ac.PodSpec().
		WithRestartPolicy(corev1.RestartPolicyNever).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithVolumes(corev1ac.Volume().WithName("docker-config").
			WithSecret(corev1ac.SecretVolumeSource().WithSecretName(cfg.RegistrySecret).
				WithItems(corev1ac.KeyToPath().WithKey(corev1.DockerConfigJsonKey).WithPath("config.json")))).
		WithContainers(container)
	return batchv1ac.Job(name, cfg.BuildNamespace).
		WithLabels(l).
		WithSpec(batchv1ac.JobSpec().
			WithBackoffLimit(1).
			WithActiveDeadlineSeconds(int64(cfg.BuildTimeout.Seconds())).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(l).WithSpec(pod)))
}

func secretEnv(name, secret, key string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
		WithSecretKeyRef(corev1ac.SecretKeySelector().WithName(secret).WithKey(key)))
}
