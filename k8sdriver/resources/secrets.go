package resources

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

// A version's namespace secrets reach its pods from one Kubernetes Secret
// with one key per secret, named as the secret (lower-case, so never a
// SLESS_* key of a run's Secret): env variables by valueFrom.secretKeyRef
// and secret_files through a read-only secret volume at
// domain.SecretFilesDir, so no value is ever in a pod spec. A secret used
// both ways is held once. Whose Secret it is:
//
//	server pods   ServerSecret, owned by the function's Service; Scale
//	              deletes the other versions' once its rollout is done
//	a run         RunSecret (the run's event beside them), owned by its Job
//	a cron run    CronSecret, owned by the trigger's CronJob; ApplySchedule
//	              deletes the trigger's other versions'
//
// Each is immutable: its name follows the version and what it references
// (never a value), and a secret's version has one value for good.

// MaxSecretBytes is what Kubernetes holds in one Secret, its values together.
const MaxSecretBytes = 1 << 20

// secretsVolume is the pod volume of a version's secret_files.
const secretsVolume = "secrets"

// secretFileMode is the mode of a secret file: the kubelet adds group
// read for the pod's fsGroup (runAsID), the function's group.
const secretFileMode int32 = 0o400

// usesSecrets reports whether w's version takes any namespace secret.
func usesSecrets(w driver.Workload) bool {
	return len(w.Config.Secrets) > 0 || len(w.Config.SecretFiles) > 0
}

// ServerSecretName returns the name of the Secret of a version's server pods.
func ServerSecretName(w driver.Workload) string {
	return ObjectName(w.Function) + "-v" + strconv.Itoa(w.Version) + "-secrets-" + secretRefsHash(w, "")
}

// CronSecretName returns the name of the Secret of a cron trigger's runs.
func CronSecretName(c driver.CronSpec) string {
	return CronJobName(c.Trigger) + "-v" + strconv.Itoa(c.Version) + "-secrets-" + secretRefsHash(c.Workload, c.Trigger)
}

// secretRefsHash hashes what a version's Secret holds without a value: the
// variables and files, and the secrets' versions.
func secretRefsHash(w driver.Workload, trigger string) string {
	parts := []string{w.Function, trigger}
	for _, env := range slices.Sorted(maps.Keys(w.Config.Secrets)) {
		parts = append(parts, "env", env, w.Config.Secrets[env])
	}
	for _, f := range w.Config.SecretFiles {
		parts = append(parts, "file", f)
	}
	for _, name := range slices.Sorted(maps.Keys(w.Config.SecretVersions)) {
		parts = append(parts, "version", name, strconv.Itoa(w.Config.SecretVersions[name]))
	}
	return shortHash(parts...)
}

// ServerSecret returns the immutable Secret with the namespace secrets of a
// version's server pods (sv, from driver.OpenSecrets), or nil when the
// version uses none. The caller makes the function's Service its owner.
func ServerSecret(w driver.Workload, sv driver.SecretValues) *corev1ac.SecretApplyConfiguration {
	if !usesSecrets(w) {
		return nil
	}
	return immutableSecret(ServerSecretName(w), w.Namespace, objectLabels("secrets", w.Function, LabelVersion, strconv.Itoa(w.Version)), secretData(w, sv))
}

// CronSecret returns the immutable Secret with the namespace secrets of a
// cron trigger's runs, or nil when the version uses none. The caller makes
// the trigger's CronJob its owner.
func CronSecret(c driver.CronSpec, sv driver.SecretValues) *corev1ac.SecretApplyConfiguration {
	if !usesSecrets(c.Workload) {
		return nil
	}
	l := objectLabels("secrets", c.Function, LabelVersion, strconv.Itoa(c.Version), LabelTrigger, c.Trigger)
	return immutableSecret(CronSecretName(c), c.Namespace, l, secretData(c.Workload, sv))
}

// SupersededServerSecrets selects the server Secrets of w's function but
// for w's version's: once only that version's pods run, the others' are
// garbage.
func SupersededServerSecrets(w driver.Workload) string {
	return labels.Set{LabelManagedBy: ManagedBy, LabelComponent: "secrets", LabelFunction: w.Function}.String() +
		"," + LabelVersion + "!=" + strconv.Itoa(w.Version) + ",!" + LabelTrigger
}

// CronSecrets selects the Secrets of a cron trigger, of every version.
func CronSecrets(trigger string) string {
	return labels.Set{LabelManagedBy: ManagedBy, LabelComponent: "secrets", LabelTrigger: trigger}.String()
}

// SupersededCronSecrets selects the Secrets of c's trigger but for c's
// version's.
func SupersededCronSecrets(c driver.CronSpec) string {
	return CronSecrets(c.Trigger) + "," + LabelVersion + "!=" + strconv.Itoa(c.Version)
}

// immutableSecret is an immutable Opaque Secret.
func immutableSecret(name, namespace string, l map[string]string, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(name, namespace).
		WithLabels(l).
		WithType(corev1.SecretTypeOpaque).
		WithImmutable(true).
		WithData(data)
}

// secretData returns the values of the secrets w uses by secret name:
// driver.SecretValues has them by variable and by file.
func secretData(w driver.Workload, sv driver.SecretValues) map[string][]byte {
	data := make(map[string][]byte, len(sv.Files)+len(sv.Env))
	for _, kv := range sv.Env {
		env, value, _ := strings.Cut(kv, "=")
		if name, ok := w.Config.Secrets[env]; ok {
			data[name] = []byte(value)
		}
	}
	for name, v := range sv.Files {
		data[name] = v
	}
	return data
}

// SecretBytes returns the size that counts against MaxSecretBytes.
func SecretBytes(s *corev1ac.SecretApplyConfiguration) int {
	n := 0
	for _, v := range s.Data {
		n += len(v)
	}
	return n
}

// versionSecretEnv returns the variables of w that take a namespace secret's
// value, read from the key of that secret in the Secret named secret.
func versionSecretEnv(w driver.Workload, secret string) []envVar {
	env := make([]envVar, 0, len(w.Config.Secrets))
	for _, name := range slices.Sorted(maps.Keys(w.Config.Secrets)) {
		env = append(env, envVar{name: name, secret: secret, key: w.Config.Secrets[name]})
	}
	return env
}

// withSecretFiles adds w's secret_files to a function pod: a secret volume
// of the Secret named secret with one item per file, mounted read-only at
// domain.SecretFilesDir in the function container.
func withSecretFiles(pod *corev1ac.PodSpecApplyConfiguration, w driver.Workload, secret string) {
	if len(w.Config.SecretFiles) == 0 {
		return
	}
	items := make([]*corev1ac.KeyToPathApplyConfiguration, 0, len(w.Config.SecretFiles))
	for _, name := range w.Config.SecretFiles {
		items = append(items, corev1ac.KeyToPath().WithKey(name).WithPath(name))
	}
	pod.WithVolumes(corev1ac.Volume().WithName(secretsVolume).
		WithSecret(corev1ac.SecretVolumeSource().WithSecretName(secret).WithDefaultMode(secretFileMode).WithItems(items...)))
	pod.Containers[0].WithVolumeMounts(corev1ac.VolumeMount().WithName(secretsVolume).WithMountPath(domain.SecretFilesDir).WithReadOnly(true))
}

// JobOwner is the owner reference that makes job the owner of an object in
// its namespace, for the garbage collector: not its controller, and not
// blocking the Job's deletion.
func JobOwner(job *batchv1.Job) *metav1ac.OwnerReferenceApplyConfiguration {
	return owner(batchv1.SchemeGroupVersion.String(), "Job", job.Name, job.UID)
}

// CronJobOwner is JobOwner for a CronJob.
func CronJobOwner(cj *batchv1.CronJob) *metav1ac.OwnerReferenceApplyConfiguration {
	return owner(batchv1.SchemeGroupVersion.String(), "CronJob", cj.Name, cj.UID)
}

// ServiceOwner is JobOwner for a Service.
func ServiceOwner(svc *corev1.Service) *metav1ac.OwnerReferenceApplyConfiguration {
	return owner(corev1.SchemeGroupVersion.String(), "Service", svc.Name, svc.UID)
}

func owner(apiVersion, kind, name string, uid types.UID) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(apiVersion).
		WithKind(kind).
		WithName(name).
		WithUID(uid).
		WithController(false).
		WithBlockOwnerDeletion(false)
}
