package console

import (
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/store"
)

// The console shows secrets read-only: their names, versions and users,
// never a value (it has none: values are sealed in package secrets and only
// the drivers open them). Setting and deleting stay with the CLI, the API
// and Terraform.

// secretsView is a namespace's secrets page.
type secretsView struct {
	Namespace string
	Own       bool
	Secrets   []store.SecretInfo
}

// secretsPage serves GET /console/{ns}/secrets: the namespace's secrets by
// name with their newest version, when it was set and the functions using
// each.
func (c *Console) secretsPage(w http.ResponseWriter, r *http.Request, s session) error {
	ctx, ns := r.Context(), r.PathValue("ns")
	if !domain.IsNamespace(ns) {
		return domain.Errorf(domain.ENOTFOUND, "there is no namespace %q", ns)
	}
	ss, err := c.cfg.Store.ListSecrets(ctx, ns)
	if err != nil {
		return err
	}
	head, err := c.cfg.Store.NamespaceHead(ctx, ns)
	if err != nil {
		return err
	}
	c.renderView(w, r, http.StatusOK, "secrets", view{Title: "Secrets · " + ns, Session: &s, Live: "/console/" + ns + "/live",
		Cursor: head.String(), Page: secretsView{Namespace: ns, Own: ns == s.Namespace, Secrets: ss}})
	return nil
}

// secretRef is one secret a function uses: as the environment variable Env,
// or as the file Path.
type secretRef struct {
	Env, Path string
	Secret    string
	// Version is the secret's version the function's configuration runs;
	// Newest the secret's newest when it is newer (a set whose function
	// version is not active yet), else 0.
	Version, Newest int
}

// secretRefs are the secrets f's configuration uses, variables by name
// then files by name; newest are the namespace's secrets.
func secretRefs(cfg domain.FunctionConfig, newest []store.SecretInfo) []secretRef {
	newer := func(name string) int {
		i := slices.IndexFunc(newest, func(s store.SecretInfo) bool { return s.Name == name })
		if i < 0 || newest[i].Version <= cfg.SecretVersions[name] {
			return 0
		}
		return newest[i].Version
	}
	var refs []secretRef
	for env, name := range cfg.Secrets {
		refs = append(refs, secretRef{Env: env, Secret: name, Version: cfg.SecretVersions[name], Newest: newer(name)})
	}
	slices.SortFunc(refs, func(a, b secretRef) int { return strings.Compare(a.Env, b.Env) })
	for _, name := range slices.Sorted(slices.Values(cfg.SecretFiles)) {
		refs = append(refs, secretRef{Path: path.Join(domain.SecretFilesDir, name), Secret: name,
			Version: cfg.SecretVersions[name], Newest: newer(name)})
	}
	return refs
}

// functionSecrets reads what the function page says of f's secrets.
func (c *Console) functionSecrets(r *http.Request, f domain.Function) ([]secretRef, error) {
	if len(f.Config.Secrets) == 0 && len(f.Config.SecretFiles) == 0 {
		return nil, nil
	}
	ss, err := c.cfg.Store.ListSecrets(r.Context(), f.Namespace)
	if err != nil {
		return nil, err
	}
	return secretRefs(f.Config, ss), nil
}
