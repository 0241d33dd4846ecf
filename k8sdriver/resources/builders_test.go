package resources

import (
	"bytes"
	"encoding/json"
	"flag"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// builderConfig is the configuration of the golden files.
func builderConfig() Config {
	return Config{
		Registry: "registry.test/sless",
		Cache:    true, CacheRepo: "registry.test/sless/cache",
		S3:           S3Config{Bucket: "sless-code", Endpoint: "http://minio.sless-system.svc:9000"},
		EgressAllow:  []domain.EgressRule{{Prefix: netip.MustParsePrefix("10.20.0.0/16"), Port: 5432}, {Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: 5432}},
		BuildTimeout: 10 * time.Minute,
	}
}

const goldenNS = "sless-0123456789abcdef"

func goldenWorkload() driver.Workload {
	return driver.Workload{Namespace: goldenNS, Function: "hello", Version: 3,
		Image: "registry.test/sless/" + goldenNS + "/hello:0123456789abcdef01234567-89abcdef",
		Config: domain.FunctionConfig{Runtime: domain.RuntimePython311, Entrypoint: "handler.handle", MemoryMB: 256, TimeoutSec: 30,
			EnvVars: map[string]string{"DB_PASSWORD": "hunter2-literal", "GREETING": "hi", "API_TOKEN": "tok-literal"},
			// api-key both ways: the Secret holds it once.
			Secrets:        map[string]string{"DB_URL": "db-url", "API_KEY": "api-key"},
			SecretFiles:    []string{"api-key", "tls-key"},
			SecretVersions: map[string]int{"api-key": 1, "db-url": 2, "tls-key": 4}}}
}

// goldenSecretValues are the golden workload's secrets as
// driver.OpenSecrets returns them.
func goldenSecretValues() driver.SecretValues {
	return driver.SecretValues{Env: []string{"API_KEY=key-0451-literal", "DB_URL=postgres://u:pw-literal@db/x"},
		Files: map[string][]byte{"api-key": []byte("key-0451-literal"), "tls-key": []byte("-----BEGIN KEY-----\nfile-literal\n")}}
}

// goldenCron is the trigger of the golden CronJob and its Secret.
func goldenCron() driver.CronSpec {
	return driver.CronSpec{Workload: goldenWorkload(), Trigger: "every-minute", Schedule: "* * * * *", Enabled: false}
}

func goldenBuild(rt domain.Runtime, entrypoint string) driver.BuildSpec {
	return driver.BuildSpec{Namespace: goldenNS, Function: "hello", Version: 3,
		Digest: "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		ZipKey: "code/" + goldenNS + "/hello/0123/source.zip", ContextKey: "code/" + goldenNS + "/hello/0123/context-00aa.tar.gz",
		Config: domain.FunctionConfig{Runtime: rt, Entrypoint: entrypoint, MemoryMB: 128, TimeoutSec: 30}}
}

// goldenRun is the run of the golden RunJob and RunSecret.
func goldenRun() driver.RunSpec {
	return driver.RunSpec{Workload: goldenWorkload(), Name: "nightly-report", RunID: 42, Event: json.RawMessage(`{"n":7}`)}
}

// goldenObjects are every builder's output for the golden inputs.
func goldenObjects(t *testing.T) map[string]any {
	t.Helper()
	cfg := builderConfig()
	w := goldenWorkload()
	tenant, err := TenantObjects(cfg, goldenNS)
	if err != nil {
		t.Fatal(err)
	}
	noCache := cfg
	noCache.Cache = false
	return map[string]any{
		"tenant-namespace":     tenant.Namespace,
		"tenant-networkpolicy": tenant.NetworkPolicy,
		"tenant-quota":         tenant.Quota,
		"tenant-limitrange":    tenant.LimitRange,
		"kaniko-python-cache":  KanikoJob(cfg, goldenBuild(domain.RuntimePython311, "handler.handle")),
		"kaniko-go-nocache":    KanikoJob(noCache, goldenBuild(domain.RuntimeGo123, "Handle")),
		"deployment":           Deployment(driver.Deployment{Workload: w, Replicas: 2}),
		"service":              Service(goldenNS, "hello"),
		"env-secret":           EnvSecret(w),
		"server-secret":        ServerSecret(w, goldenSecretValues()),
		"run-job":              RunJob(cfg, goldenRun()),
		"run-secret":           RunSecret(goldenRun(), goldenSecretValues()),
		"cronjob-suspended":    CronJob(Config{Registry: "r", S3: S3Config{Bucket: "b"}, CronTimeZone: "Europe/Paris"}, goldenCron()),
		"cron-secret":          CronSecret(goldenCron(), goldenSecretValues()),
	}
}

// TestGolden compares every builder's output with testdata/<name>.json; run
// with -update to rewrite them after a deliberate change, and read the diff.
func TestGolden(t *testing.T) {
	t.Parallel()
	for name, obj := range goldenObjects(t) {
		got, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", name+".json")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from %s (go test -run TestGolden -update rewrites it):\n%s", name, path, got)
		}
	}
}

// TestBuildersAreDeterministic builds every object many times: map order
// must never show in the output.
func TestBuildersAreDeterministic(t *testing.T) {
	t.Parallel()
	first, _ := json.Marshal(goldenObjects(t))
	for range 20 {
		again, _ := json.Marshal(goldenObjects(t))
		if !bytes.Equal(first, again) {
			t.Fatal("the builders' output changed between two calls with the same input")
		}
	}
}

// decode turns an apply configuration into the typed object.
func decode[T any](t *testing.T, ac any) *T {
	t.Helper()
	data, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return &v
}

// functionPodSpecs returns the pod specs of every function workload.
func functionPodSpecs(t *testing.T) map[string]corev1.PodSpec {
	objs := goldenObjects(t)
	return map[string]corev1.PodSpec{
		"deployment": decode[appsv1.Deployment](t, objs["deployment"]).Spec.Template.Spec,
		"run-job":    decode[batchv1.Job](t, objs["run-job"]).Spec.Template.Spec,
		"cronjob":    decode[batchv1.CronJob](t, objs["cronjob-suspended"]).Spec.JobTemplate.Spec.Template.Spec,
	}
}

// TestRestrictedSecurityContext: every function pod meets Pod Security
// "restricted" and gets no service account token (research 4F F1).
func TestRestrictedSecurityContext(t *testing.T) {
	t.Parallel()
	for name, spec := range functionPodSpecs(t) {
		psc := spec.SecurityContext
		if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s: pod security context %+v is not restricted", name, psc)
		}
		if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
			t.Errorf("%s: the service account token is mounted", name)
		}
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			t.Errorf("%s: host namespaces are shared", name)
		}
		for _, v := range spec.Volumes {
			if v.HostPath != nil {
				t.Errorf("%s: hostPath volume %s", name, v.Name)
			}
		}
		for _, c := range spec.Containers {
			sc := c.SecurityContext
			if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 ||
				sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
				t.Errorf("%s/%s: container security context %+v is not restricted with a read-only root", name, c.Name, sc)
			}
			if c.Resources.Limits.Memory().Value() != 256<<20 || c.Resources.Requests.Memory().Value() != 256<<20 {
				t.Errorf("%s/%s: memory %v, want memory_mb 256 as request and limit", name, c.Name, c.Resources)
			}
		}
	}
}

// secretish matches variable names that would carry credentials.
var secretish = regexp.MustCompile(`(?i)secret|password|passwd|token|access_key|credential|api_key`)

// TestNoSecretLiteralsInEnv: credentials reach containers by reference only;
// the user's variables are in a Secret, never literal in a pod spec
// (research 4F F4; the prototype set them with kubectl set env).
func TestNoSecretLiteralsInEnv(t *testing.T) {
	t.Parallel()
	w := goldenWorkload()
	specs := functionPodSpecs(t)
	objs := goldenObjects(t)
	specs["kaniko-python-cache"] = decode[batchv1.Job](t, objs["kaniko-python-cache"]).Spec.Template.Spec
	specs["kaniko-go-nocache"] = decode[batchv1.Job](t, objs["kaniko-go-nocache"]).Spec.Template.Spec
	for name, spec := range specs {
		data, _ := json.Marshal(spec)
		for k, v := range w.Config.EnvVars {
			if strings.Contains(string(data), v) {
				t.Errorf("%s: the value of the user's %s appears in the pod spec", name, k)
			}
		}
		for _, c := range spec.Containers {
			for _, e := range c.Env {
				if secretish.MatchString(e.Name) && e.ValueFrom == nil {
					t.Errorf("%s/%s: %s is a literal value", name, c.Name, e.Name)
				}
			}
		}
	}
	for name, spec := range functionPodSpecs(t) {
		env := spec.Containers[0].EnvFrom
		if len(env) != 1 || env[0].SecretRef == nil || env[0].SecretRef.Name != EnvSecretName("hello", w.Config.EnvVars) {
			t.Errorf("%s: envFrom = %+v, want the version's Secret", name, env)
		}
		names := []string{}
		for _, e := range spec.Containers[0].Env {
			names = append(names, e.Name)
		}
		if !slices.IsSorted(names) {
			t.Errorf("%s: env not sorted: %v", name, names)
		}
	}
	secret := decode[corev1.Secret](t, objs["env-secret"])
	if secret.Immutable == nil || !*secret.Immutable || string(secret.Data["DB_PASSWORD"]) != "hunter2-literal" {
		t.Errorf("env secret = %+v, want immutable with the user's variables", secret)
	}
}

// TestRunEventInSecret: a run's event is the user's input, so it reaches
// the container from the run's Secret only, never as a literal in the Job;
// a cron run's event is the platform's and stays literal.
func TestRunEventInSecret(t *testing.T) {
	t.Parallel()
	const marker = "card-4111-event-literal"
	r := goldenRun()
	r.Config.Secrets, r.Config.SecretFiles, r.Config.SecretVersions = nil, nil, nil // TestNamespaceSecrets's
	r.Event = json.RawMessage(`{"card":"` + marker + `"}`)
	job := decode[batchv1.Job](t, RunJob(builderConfig(), r))
	data, _ := json.Marshal(job)
	if strings.Contains(string(data), marker) {
		t.Errorf("the run's event appears in its Job: %s", data)
	}
	var event *corev1.EnvVar
	for i, e := range job.Spec.Template.Spec.Containers[0].Env {
		if e.Name == EventKey {
			event = &job.Spec.Template.Spec.Containers[0].Env[i]
		}
	}
	if event == nil || event.Value != "" || event.ValueFrom == nil || event.ValueFrom.SecretKeyRef == nil ||
		event.ValueFrom.SecretKeyRef.Name != job.Name || event.ValueFrom.SecretKeyRef.Key != EventKey {
		t.Errorf("%s = %+v, want a secretKeyRef to key %s of Secret %s", EventKey, event, EventKey, job.Name)
	}
	for _, e := range job.Spec.Template.Spec.Containers[0].Env {
		if e.Name != EventKey && (e.ValueFrom != nil || e.Value == "") {
			t.Errorf("platform variable %s = %+v, want a literal", e.Name, e)
		}
	}
	secret := decode[corev1.Secret](t, RunSecret(r, driver.SecretValues{}))
	if secret.Name != job.Name || secret.Namespace != job.Namespace || secret.Type != corev1.SecretTypeOpaque ||
		secret.Immutable == nil || !*secret.Immutable || string(secret.Data[EventKey]) != string(r.Event) || len(secret.Data) != 1 {
		t.Errorf("event secret = %+v, want an immutable Opaque Secret named after the Job with the event", secret)
	}
	for k, v := range job.Labels {
		if secret.Labels[k] != v || len(secret.Labels) != len(job.Labels) {
			t.Errorf("event secret labels %v, want the Job's %v", secret.Labels, job.Labels)
			break
		}
	}
	r.Event = nil
	if got := decode[corev1.Secret](t, RunSecret(r, driver.SecretValues{})).Data[EventKey]; string(got) != "{}" {
		t.Errorf("the event of a run without one = %q, want {}", got)
	}
	cron := decode[batchv1.CronJob](t, goldenObjects(t)["cronjob-suspended"]).Spec.JobTemplate.Spec.Template.Spec.Containers[0]
	for _, e := range cron.Env {
		if e.Name == EventKey && (e.ValueFrom != nil || e.Value != `{"schedule":"* * * * *","trigger":"every-minute"}`) {
			t.Errorf("cron %s = %+v, want the literal trigger and schedule", EventKey, e)
		}
	}
}

// TestKanikoJob checks the build isolation settings (research 4E E5) and
// that --cache follows the configuration both ways: the prototype broke
// builds by toggling it.
func TestKanikoJob(t *testing.T) {
	t.Parallel()
	objs := goldenObjects(t)
	for name, want := range map[string]struct {
		cache, buildArg string
	}{
		"kaniko-python-cache": {"--cache=true", ""},
		"kaniko-go-nocache":   {"--cache=false", "--build-arg=SLESS_ENTRYPOINT=Handle"},
	} {
		job := decode[batchv1.Job](t, objs[name])
		if job.Namespace != "sless-builds" {
			t.Errorf("%s: namespace %q, want the build namespace", name, job.Namespace)
		}
		if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 1 || job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != 600 {
			t.Errorf("%s: backoffLimit %v, activeDeadlineSeconds %v; want 1 and 600", name, job.Spec.BackoffLimit, job.Spec.ActiveDeadlineSeconds)
		}
		pod := job.Spec.Template.Spec
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("%s: token mounted or restarted in place", name)
		}
		if job.Spec.Template.Labels[LabelBuild] != job.Name || job.Spec.Template.Labels[LabelNamespace] != goldenNS {
			t.Errorf("%s: pod labels %v lack the build and tenant labels", name, job.Spec.Template.Labels)
		}
		c := pod.Containers[0]
		args := strings.Join(c.Args, " ")
		for _, a := range []string{"--context=s3://sless-code/code/" + goldenNS + "/hello/0123/context-00aa.tar.gz", "--destination=registry.test/sless/" + goldenNS + "/hello:", want.cache} {
			if !strings.Contains(args, a) {
				t.Errorf("%s: args %q lack %q", name, args, a)
			}
		}
		if strings.Contains(args, "--build-arg") != (want.buildArg != "") || (want.buildArg != "" && !strings.Contains(args, want.buildArg)) {
			t.Errorf("%s: args %q, want build arg %q", name, args, want.buildArg)
		}
		if strings.Contains(args, "--cache-repo") != (want.cache == "--cache=true") {
			t.Errorf("%s: args %q: --cache-repo goes with --cache=true only", name, args)
		}
		if c.Resources.Limits.Cpu().IsZero() || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s: no resource limits: %+v", name, c.Resources)
		}
		mounted := false
		for _, m := range c.VolumeMounts {
			mounted = mounted || (m.MountPath == kanikoDockerDir && m.ReadOnly)
		}
		vol := pod.Volumes[0]
		if !mounted || vol.Secret == nil || vol.Secret.SecretName != "sless-registry" || vol.Secret.Items[0].Path != "config.json" {
			t.Errorf("%s: the registry credentials are not a mounted docker config: %+v %+v", name, c.VolumeMounts, pod.Volumes)
		}
	}
	// The same code gives the same tag; other code, base image or Go entrypoint another.
	b := goldenBuild(domain.RuntimeGo123, "Handle")
	other := b
	other.Config.Entrypoint = "Other"
	otherCtx := b
	otherCtx.ContextKey += "x"
	if ImageTag(b) != ImageTag(goldenBuild(domain.RuntimeGo123, "Handle")) || ImageTag(b) == ImageTag(other) || ImageTag(b) == ImageTag(otherCtx) {
		t.Error("ImageTag must follow the digest, the context and the Go entrypoint, and nothing else")
	}
	if !strings.HasPrefix(ImageTag(b), "0123456789abcdef01234567-") {
		t.Errorf("ImageTag %q does not start with the digest", ImageTag(b))
	}
}

// TestTenantObjects: default deny both ways, DNS and the control plane
// allowed, never the metadata address; quota and limits present (4F F2, F3).
func TestTenantObjects(t *testing.T) {
	t.Parallel()
	objs := goldenObjects(t)
	ns := decode[corev1.Namespace](t, objs["tenant-namespace"])
	if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		t.Errorf("namespace labels %v: Pod Security restricted is not enforced", ns.Labels)
	}
	np := decode[networkingv1.NetworkPolicy](t, objs["tenant-networkpolicy"])
	if len(np.Spec.PodSelector.MatchLabels) != 0 || len(np.Spec.PodSelector.MatchExpressions) != 0 ||
		!slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("network policy does not select every pod for ingress and egress: %+v", np.Spec)
	}
	if len(np.Spec.Ingress) != 1 || np.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "sless-system" {
		t.Errorf("ingress = %+v, want only the control plane's namespace", np.Spec.Ingress)
	}
	metadata := netip.MustParseAddr("169.254.169.254")
	for _, rule := range np.Spec.Egress {
		for _, peer := range rule.To {
			if peer.IPBlock == nil {
				continue
			}
			allowed := netip.MustParsePrefix(peer.IPBlock.CIDR).Contains(metadata)
			for _, ex := range peer.IPBlock.Except {
				if netip.MustParsePrefix(ex).Contains(metadata) {
					allowed = false
				}
			}
			if allowed {
				t.Errorf("egress rule %+v reaches the metadata address", peer.IPBlock)
			}
		}
	}
	// The same promise as the local driver's sandboxes (egress package):
	// the internet, what the operator opened, nothing of the blocked ranges.
	for _, c := range []struct {
		addr    string
		port    int32
		allowed bool
	}{
		{"93.184.216.34", 443, true}, {"203.0.113.10", 80, true},
		{"10.20.1.5", 5432, true}, {"10.20.1.5", 22, false}, {"10.1.1.1", 5432, false},
		{"172.16.0.1", 80, false}, {"192.168.1.1", 80, false}, {"100.64.0.1", 80, false},
		{"169.254.169.254", 80, false}, {"127.0.0.1", 5432, false}, {"224.0.0.1", 80, false},
	} {
		if got := egressAllows(np, netip.MustParseAddr(c.addr), c.port); got != c.allowed {
			t.Errorf("egress to %s:%d allowed = %v, want %v", c.addr, c.port, got, c.allowed)
		}
	}
	quota := decode[corev1.ResourceQuota](t, objs["tenant-quota"])
	for _, r := range []corev1.ResourceName{"pods", "requests.cpu", "requests.memory", "count/jobs.batch"} {
		if _, ok := quota.Spec.Hard[r]; !ok {
			t.Errorf("quota lacks %s: %v", r, quota.Spec.Hard)
		}
	}
	lr := decode[corev1.LimitRange](t, objs["tenant-limitrange"])
	if len(lr.Spec.Limits) != 1 || lr.Spec.Limits[0].Default.Memory().IsZero() || lr.Spec.Limits[0].DefaultRequest.Memory().IsZero() {
		t.Errorf("limit range lacks defaults: %+v", lr.Spec)
	}
	if _, err := TenantObjects(Config{EgressAllow: []domain.EgressRule{{Prefix: netip.MustParsePrefix("0.0.0.0/0")}}}, goldenNS); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a rule opening every address = %v, want EINVALID", err)
	}
	if _, err := TenantObjects(Config{}, "default"); domain.ErrorCode(err) != domain.EINVALID {
		t.Errorf("a namespace that is not a tenant's = %v, want EINVALID", err)
	}
}

// TestJobLabels: the run's pod carries our labels, which Run selects by
// (job-name= is gone since Kubernetes 1.27), and no TTL before capture.
func TestJobLabels(t *testing.T) {
	t.Parallel()
	job := decode[batchv1.Job](t, goldenObjects(t)["run-job"])
	pl := job.Spec.Template.Labels
	if pl[LabelJob] != job.Name || pl[LabelFunction] != "hello" || pl[LabelManagedBy] != ManagedBy {
		t.Errorf("pod template labels %v lack %s=%s and %s=hello", pl, LabelJob, job.Name, LabelFunction)
	}
	if job.Spec.TTLSecondsAfterFinished != nil {
		t.Error("ttlSecondsAfterFinished is set before the output is captured")
	}
	if *job.Spec.BackoffLimit != 0 || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever || *job.Spec.ActiveDeadlineSeconds != 30+60 {
		t.Errorf("run job spec = %+v, want one attempt and timeout_sec + start grace", job.Spec)
	}
	cron := decode[batchv1.CronJob](t, goldenObjects(t)["cronjob-suspended"])
	if cron.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent || cron.Spec.Suspend == nil || !*cron.Spec.Suspend ||
		cron.Spec.TimeZone == nil || *cron.Spec.TimeZone != "Europe/Paris" || cron.Spec.SuccessfulJobsHistoryLimit == nil {
		t.Errorf("cron job spec = %+v", cron.Spec)
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a", 63)
	if n := RunJobName(driver.RunSpec{Workload: driver.Workload{Namespace: goldenNS, Function: long}, Name: long + "-1700000000", RunID: 1700000000}); len(n) > 49 {
		t.Errorf("RunJobName = %q (%d characters), want at most 49", n, len(n))
	}
	a := RunJobName(driver.RunSpec{Workload: driver.Workload{Namespace: goldenNS, Function: "f"}, Name: "job-f", RunID: 1})
	b := RunJobName(driver.RunSpec{Workload: driver.Workload{Namespace: goldenNS, Function: "f"}, Name: "job-f", RunID: 2})
	if a == b {
		t.Error("two runs of the same job share a Job name")
	}
	if n := CronJobName(long); len(n) > 52 {
		t.Errorf("CronJobName = %q, want at most 52 characters", n)
	}
	if ObjectName("hello") != "hello" || ObjectName("1abc")[0] != 'f' || len(ObjectName("9"+long[:62])) > 63 {
		t.Errorf("ObjectName: %q %q", ObjectName("hello"), ObjectName("1abc"))
	}
}

// egressAllows reports whether a NetworkPolicy's ipBlock egress rules let
// a TCP connection to addr:port through.
func egressAllows(np *networkingv1.NetworkPolicy, addr netip.Addr, port int32) bool {
	for _, rule := range np.Spec.Egress {
		portOK := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			if p.Protocol != nil && *p.Protocol == corev1.ProtocolTCP && p.Port != nil && p.Port.IntVal == port {
				portOK = true
			}
		}
		for _, peer := range rule.To {
			if peer.IPBlock == nil || !portOK || !netip.MustParsePrefix(peer.IPBlock.CIDR).Contains(addr) {
				continue
			}
			excepted := false
			for _, ex := range peer.IPBlock.Except {
				excepted = excepted || netip.MustParsePrefix(ex).Contains(addr)
			}
			if !excepted {
				return true
			}
		}
	}
	return false
}

// TestKanikoArgsForAMirroredRegistry: mirrors and plain-HTTP registries
// become kaniko flags in a fixed order, and only when configured.
func TestKanikoArgsForAMirroredRegistry(t *testing.T) {
	t.Parallel()
	b := goldenBuild(domain.RuntimePython311, "handler.handle")
	cfg := Config{Registry: "10.1.2.3:5000/sless", S3: S3Config{Bucket: "sless-code"},
		RegistryMirrors:    map[string]string{"index.docker.io": "10.1.2.3:5000", "gcr.io": "10.1.2.3:5000"},
		InsecureRegistries: []string{"10.1.2.3:5000"}}
	args := strings.Join(KanikoArgs(cfg, b), " ")
	want := "--registry-map=gcr.io=10.1.2.3:5000 --registry-map=index.docker.io=10.1.2.3:5000 --insecure-registry=10.1.2.3:5000"
	if !strings.Contains(args, want) {
		t.Errorf("args %q lack %q", args, want)
	}
	if plain := strings.Join(KanikoArgs(Config{Registry: "r/sless", S3: S3Config{Bucket: "b"}}, b), " "); strings.Contains(plain, "--registry-map") || strings.Contains(plain, "--insecure") {
		t.Errorf("args without mirrors %q name one", plain)
	}
}

// TestRetirePatch: the patch sets the deletion cost annotation and nothing else.
func TestRetirePatch(t *testing.T) {
	var pod corev1.Pod
	if err := json.Unmarshal(RetirePatch(), &pod); err != nil {
		t.Fatal(err)
	}
	want := corev1.Pod{}
	want.Annotations = map[string]string{"controller.kubernetes.io/pod-deletion-cost": "-1000"}
	if !reflect.DeepEqual(pod, want) {
		t.Fatalf("patch = %s", RetirePatch())
	}
}
