package k8sdriver

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/driver"
	"github.com/slessio/sless/k8sdriver/testcluster"
)

// TestControlPlaneRole runs the driver as a user bound to nothing but the
// ClusterRole of deploy/base: every call the driver makes must be allowed,
// and what the role leaves out is EFORBIDDEN.
func TestControlPlaneRole(t *testing.T) {
	t.Parallel()
	c := testcluster.Get(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	var role *rbacv1.ClusterRole
	for _, u := range readObjects(t, filepath.Join(deployDir, "base", "rbac.yaml")) {
		if u.GetKind() == "ClusterRole" {
			role = &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, role); err != nil {
				t.Fatal(err)
			}
		}
	}
	if role == nil {
		t.Fatal("deploy/base/rbac.yaml has no ClusterRole")
	}
	role.Name = "rbac-test-" + tenantNamespace(t, c) // unique per run; the namespace is only a random name here
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: testcluster.ControlPlaneUser}}}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(ctx, role.Name, metav1.DeleteOptions{})
		_ = c.Client.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{})
	})
	cp, err := kubernetes.NewForConfig(c.ControlPlaneConfig())
	if err != nil {
		t.Fatal(err)
	}
	// RBAC changes reach the authorizer through an informer: wait for them.
	for {
		_, err := cp.BatchV1().Jobs("sless-builds").List(ctx, metav1.ListOptions{})
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the role never applied: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}

	e := setup(t, func(cfg *Config) { cfg.Endpoint = EndpointSlices }, cp)
	vault := &fakeVault{}
	secretValuesOf(e.ns, vault)
	e.d.UseSecrets(vault)
	// With namespace secrets: their Secrets are applied, owned and
	// deleted as the role allows.
	w := withSecrets(e.mustBuild("guarded", 1, "rbac"), 1, 1, 1)
	e.mustDeploy(w, 1)
	e.mustDeploy(withSecrets(w, 2, 2, 1), 1)
	e.mustDeploy(w, 1)
	eps := e.mustScale(w, 2, nil)
	e.mustScale(w, 1, eps[:1]) // marks the retired pod (patch)
	if _, err := e.d.Deploy(ctx, driver.Deployment{Workload: w, Replicas: 0}); err != nil {
		t.Fatalf("scale to zero: %v", err)
	}
	if res, err := e.d.Run(ctx, driver.RunSpec{Workload: w, Name: "once", RunID: 1, Event: json.RawMessage(`{}`)}); err != nil || res.ExitCode != 0 {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	cron := driver.CronSpec{Workload: w, Trigger: "hourly", Schedule: "@hourly", Enabled: true}
	if err := e.d.ApplySchedule(ctx, cron); err != nil {
		t.Fatalf("ApplySchedule: %v", err)
	}
	if err := e.d.RemoveSchedule(ctx, e.ns, cron.Trigger); err != nil {
		t.Fatalf("RemoveSchedule: %v", err)
	}
	if err := e.d.Remove(ctx, e.ns, "guarded"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	// Reading logs is allowed; with no kubelet the node cannot answer.
	pods, err := c.Client.CoreV1().Pods("sless-builds").List(ctx, metav1.ListOptions{Limit: 1})
	if err == nil && len(pods.Items) > 0 {
		_, err := KubeletLogs{Client: cp}.ContainerLogs(ctx, LogRequest{Namespace: "sless-builds", Pod: pods.Items[0].Name, Container: "kaniko"})
		if domain.ErrorCode(err) == domain.EFORBIDDEN {
			t.Errorf("reading logs is forbidden: %v", err)
		}
	}
	// What the role leaves out.
	_, err = cp.RbacV1().Roles(e.ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "escalate"}}, metav1.CreateOptions{})
	if err := mapErr("create role", err); domain.ErrorCode(err) != domain.EFORBIDDEN {
		t.Errorf("creating a Role as the control plane = %v, want EFORBIDDEN", err)
	}
	_, err = cp.CoreV1().Secrets("kube-system").Get(ctx, "anything", metav1.GetOptions{})
	if err := mapErr("get secret", err); domain.ErrorCode(err) != domain.EFORBIDDEN {
		t.Errorf("reading a Secret as the control plane = %v, want EFORBIDDEN", err)
	}
}
