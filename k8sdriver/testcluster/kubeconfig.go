package testcluster

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

var metaGet = metav1.GetOptions{}

func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} } //nolint:gosec // probing our own self-signed server before its certificate exists

// writeKubeconfig writes a kubeconfig for cfg's host, CA and token.
func writeKubeconfig(path string, cfg *rest.Config) error {
	cluster := "    insecure-skip-tls-verify: true\n"
	if len(cfg.CAData) > 0 {
		cluster = fmt.Sprintf("    certificate-authority-data: %s\n    tls-server-name: %s\n", base64.StdEncoding.EncodeToString(cfg.CAData), cfg.ServerName)
	}
	data := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster:
    server: %s
%susers:
- name: admin
  user:
    token: %s
contexts:
- name: test
  context:
    cluster: test
    user: admin
current-context: test
`, cfg.Host, cluster, cfg.BearerToken)
	return os.WriteFile(path, []byte(data), 0o600)
}
