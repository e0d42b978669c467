package deploy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// base is the Kustomize base that users apply (kubectl apply -k).
const base = "kubernetes"

// manifests are the objects a kustomization renders, each decoded into
// its k8s.io/api type, by name.
type manifests struct {
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	budgets      map[string]*policyv1.PodDisruptionBudget
	policies     map[string]*networkingv1.NetworkPolicy
	secrets      map[string]*corev1.Secret
	// yaml is the whole rendering, as kustomize build prints it.
	yaml string
}

// render builds the kustomization in dir as "kubectl apply -k" and
// "kustomize build" do (kustomize's krusty, default options), and decodes
// every object strictly into its type of the pinned k8s.io/api, as the API
// server's strict field validation does: a field that Kubernetes does not
// know (names compare case-sensitively), one given twice, or a value of
// the wrong type fails, where the API server would reject the object or
// drop the field.
func render(t *testing.T, dir string) manifests {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	m := manifests{
		statefulSets: map[string]*appsv1.StatefulSet{},
		services:     map[string]*corev1.Service{},
		budgets:      map[string]*policyv1.PodDisruptionBudget{},
		policies:     map[string]*networkingv1.NetworkPolicy{},
		secrets:      map[string]*corev1.Secret{},
	}
	var all strings.Builder
	for _, r := range resources.Resources() {
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		all.WriteString("---\n")
		all.Write(y)
		name := r.GetName()
		id := fmt.Sprintf("%s %s", r.GetGvk(), name)
		if err := m.decode(r.GetApiVersion(), r.GetKind(), name, y); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			t.Errorf("%s: the name is no DNS subdomain: %v", id, errs)
		}
	}
	m.yaml = all.String()
	return m
}

// decode adds the object y, of apiVersion and kind, to m. A kind the
// tests do not know is an error: it would go unchecked.
func (m manifests) decode(apiVersion, kind, name string, y []byte) error {
	var obj any
	switch apiVersion + " " + kind {
	case "apps/v1 StatefulSet":
		o := &appsv1.StatefulSet{}
		m.statefulSets[name], obj = o, o
	case "v1 Service":
		o := &corev1.Service{}
		m.services[name], obj = o, o
	case "policy/v1 PodDisruptionBudget":
		o := &policyv1.PodDisruptionBudget{}
		m.budgets[name], obj = o, o
	case "networking.k8s.io/v1 NetworkPolicy":
		o := &networkingv1.NetworkPolicy{}
		m.policies[name], obj = o, o
	case "v1 Secret":
		o := &corev1.Secret{}
		m.secrets[name], obj = o, o
	default:
		return fmt.Errorf("a kind the tests do not check; add it to manifests.decode with its checks")
	}
	j, err := yaml.YAMLToJSONStrict(y)
	if err != nil {
		return err
	}
	strict, err := json.UnmarshalStrict(j, obj, json.DisallowDuplicateFields, json.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// overlay writes files into a new directory, with every "BASE" in them
// replaced by the path of the base relative to it (kustomize refuses an
// absolute one), and returns the directory.
func overlay(t *testing.T, files map[string]string) string {
	t.Helper()
	abs, err := filepath.Abs(base)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(dir, abs)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(text, "BASE", rel)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
