package deploy

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TestBase_IsAThreeMemberClusterWithItsAuthFromASecret renders the base
// as users apply it and checks the properties docs/CLUSTER.md promises.
func TestBase_IsAThreeMemberClusterWithItsAuthFromASecret(t *testing.T) {
	m := render(t, base)
	sts := checkCluster(t, m, "ns", 3, "new")
	if len(m.secrets) != 0 {
		t.Errorf("the base renders Secrets %v: no token may ship; the user creates baton-auth", keys(m.secrets))
	}
	if got := sts.Spec.Template.Spec.Containers[0].Image; got != "baton:latest" {
		t.Errorf("image %q, want the placeholder baton:latest that overlays replace", got)
	}
	for _, o := range []metav1.ObjectMeta{sts.ObjectMeta, m.services["baton"].ObjectMeta} {
		if o.Namespace != "" {
			t.Errorf("%s has namespace %q: the base leaves it to kubectl -n or an overlay", o.Name, o.Namespace)
		}
	}
}

// TestOverlay_NamespaceImageAndGeneratedSecretReachThePods renders an
// overlay such as docs/CLUSTER.md describes: its namespace, image and
// generated Secret (whose name kustomize suffixes with a hash of its
// content) must all reach the pods, and the peer URLs must follow the
// namespace, which they take from the downward API.
func TestOverlay_NamespaceImageAndGeneratedSecretReachThePods(t *testing.T) {
	dir := overlay(t, map[string]string{
		"kustomization.yaml": `namespace: locks
resources:
  - BASE
images:
  - name: baton
    newName: registry.example.com/team/baton
    newTag: "1.4.0"
secretGenerator:
  - name: baton-auth
    files:
      - auth
`,
		"auth": "admin 0123456789abcdef0123456789abcdef\n",
	})
	m := render(t, dir)
	sts := checkCluster(t, m, "locks", 3, "new")
	pod := sts.Spec.Template.Spec
	if got := pod.Containers[0].Image; got != "registry.example.com/team/baton:1.4.0" {
		t.Errorf("image %q, want the overlay's", got)
	}
	if len(m.secrets) != 1 {
		t.Fatalf("secrets %v, want the generated one", keys(m.secrets))
	}
	for name, s := range m.secrets {
		if !strings.HasPrefix(name, "baton-auth-") || s.Namespace != "locks" {
			t.Errorf("secret %s in %q, want baton-auth-HASH in locks", name, s.Namespace)
		}
		if v := authVolume(t, pod); v.Secret.SecretName != name {
			t.Errorf("the pods mount secret %s, not the generated %s", v.Secret.SecretName, name)
		}
	}
	for what, ns := range map[string]string{"statefulset": sts.Namespace, "service": m.services["baton"].Namespace,
		"budget": m.budgets["baton"].Namespace, "policy": m.policies["baton"].Namespace} {
		if ns != "locks" {
			t.Errorf("%s in namespace %q, want the overlay's", what, ns)
		}
	}
}

// checkCluster checks the one StatefulSet of m, the Services, budget and
// policy around it, and that its members, replicas of them in namespace
// ns, each advertise the peer URL that every other member's initial
// cluster names it by, with state as their BATON_INITIAL_CLUSTER_STATE.
func checkCluster(t *testing.T, m manifests, ns string, replicas int, state string) *appsv1.StatefulSet {
	t.Helper()
	if len(m.statefulSets) != 1 || m.statefulSets["baton"] == nil {
		t.Fatalf("statefulsets %v, want baton alone", keys(m.statefulSets))
	}
	sts := m.statefulSets["baton"]
	spec := sts.Spec
	if spec.Replicas == nil || int(*spec.Replicas) != replicas {
		t.Errorf("replicas %v, want %d", spec.Replicas, replicas)
	}
	if spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		t.Errorf("podManagementPolicy %q: members must start together to form a quorum", spec.PodManagementPolicy)
	}
	podLabels := labels.Set(spec.Template.Labels)
	mustSelect(t, "statefulset", spec.Selector, podLabels)
	if len(spec.Template.Spec.Containers) != 1 || len(spec.Template.Spec.InitContainers) != 0 {
		t.Fatal("want one container, baton's (the image has no shell for helpers)")
	}
	if strings.Contains(m.yaml, "2379") {
		t.Error("the rendering names 2379: etcd's client port must be neither served nor published")
	}
	checkServices(t, m, sts, podLabels)
	if pdb := m.budgets["baton"]; pdb == nil || pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromInt32(1) || pdb.Spec.MinAvailable != nil {
		t.Error("want PodDisruptionBudget baton with maxUnavailable 1 alone")
	} else {
		mustSelect(t, "budget", pdb.Spec.Selector, podLabels)
	}
	checkNetworkPolicy(t, m, podLabels)
	checkPod(t, sts, ns)
	checkMembers(t, sts, ns, replicas, state)
	return sts
}

// checkServices: the headless Service names the members before they are
// ready; the API Service reaches them on the http port.
func checkServices(t *testing.T, m manifests, sts *appsv1.StatefulSet, pods labels.Set) {
	t.Helper()
	peer, api := m.services[sts.Spec.ServiceName], m.services["baton"]
	if peer == nil || api == nil || len(m.services) != 2 {
		t.Fatalf("services %v, want the StatefulSet's headless %q and baton", keys(m.services), sts.Spec.ServiceName)
	}
	if peer.Spec.ClusterIP != corev1.ClusterIPNone || !peer.Spec.PublishNotReadyAddresses {
		t.Errorf("service %s: clusterIP %q, publishNotReadyAddresses %v; want None and true, so members resolve each other before a quorum", peer.Name, peer.Spec.ClusterIP, peer.Spec.PublishNotReadyAddresses)
	}
	if api.Spec.ClusterIP == corev1.ClusterIPNone || api.Spec.PublishNotReadyAddresses || (api.Spec.Type != "" && api.Spec.Type != corev1.ServiceTypeClusterIP) {
		t.Errorf("service baton: want a ClusterIP Service of ready pods only")
	}
	for _, s := range []*corev1.Service{peer, api} {
		if errs := validation.IsDNS1035Label(s.Name); len(errs) > 0 {
			t.Errorf("service %s: %v", s.Name, errs)
		}
		if !labels.SelectorFromSet(s.Spec.Selector).Matches(pods) || len(s.Spec.Selector) == 0 {
			t.Errorf("service %s: selector %v does not select the pods %v", s.Name, s.Spec.Selector, pods)
		}
	}
	want := map[*corev1.Service]corev1.ServicePort{
		peer: {Name: "peer", Port: 2380, TargetPort: intstr.FromString("peer")},
		api:  {Name: "http", Port: 8080, TargetPort: intstr.FromString("http")},
	}
	for s, p := range want {
		if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Name != p.Name || s.Spec.Ports[0].Port != p.Port || s.Spec.Ports[0].TargetPort != p.TargetPort {
			t.Errorf("service %s: ports %+v, want %s %d to the container's %s alone", s.Name, s.Spec.Ports, p.Name, p.Port, p.TargetPort.String())
		}
	}
}

// checkNetworkPolicy: the peer port only from baton's pods, the API from
// anywhere.
func checkNetworkPolicy(t *testing.T, m manifests, pods labels.Set) {
	t.Helper()
	np := m.policies["baton"]
	if np == nil || len(m.policies) != 1 {
		t.Fatalf("networkpolicies %v, want baton", keys(m.policies))
	}
	mustSelect(t, "networkpolicy", &np.Spec.PodSelector, pods)
	open := map[string]bool{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			switch {
			case p.Port == nil:
				t.Error("networkpolicy: a rule for every port")
			case len(rule.From) == 0:
				open[p.Port.String()] = true
			default:
				for _, from := range rule.From {
					if from.PodSelector == nil || from.NamespaceSelector != nil || from.IPBlock != nil {
						t.Errorf("networkpolicy: port %s from %+v, want baton's pods only", p.Port.String(), from)
						continue
					}
					mustSelect(t, "networkpolicy peer rule", from.PodSelector, pods)
				}
			}
		}
	}
	if !open["http"] || open["peer"] || len(open) != 1 {
		t.Errorf("networkpolicy: open to all on %v, want http alone", keys(open))
	}
}

// checkPod checks the pod template: ports, the flags that close etcd's
// client port and place the data and auth files, probes, security,
// resources, placement and the grace period.
func checkPod(t *testing.T, sts *appsv1.StatefulSet, ns string) {
	t.Helper()
	pod := sts.Spec.Template.Spec
	c := pod.Containers[0]
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%s=%d", p.Name, p.ContainerPort))
		if errs := validation.IsValidPortName(p.Name); len(errs) > 0 {
			t.Errorf("port %s: %v", p.Name, errs)
		}
	}
	if !slices.Equal(ports, []string{"http=8080", "peer=2380"}) {
		t.Errorf("container ports %v, want http=8080 and peer=2380 alone", ports)
	}
	if len(c.Command) != 0 || len(c.Args) > 1 {
		t.Errorf("command %v args %v: the image's entrypoint runs baton serve; the image has no shell", c.Command, c.Args)
	}
	env := podEnv(t, c, sts.Name+"-0", ns, "10.1.2.3")
	if v, ok := env["BATON_CLIENT_URL"]; !ok || v != "" {
		t.Errorf("BATON_CLIENT_URL %q (set: %v): it must be set and empty, so that no etcd client port is bound", v, ok)
	}
	for _, name := range []string{"BATON_LISTEN_CLIENT_URL", "BATON_CLIENT_CERT", "BATON_CLIENT_AUTO_TLS", "BATON_ETCD_ENDPOINTS"} {
		if _, ok := env[name]; ok {
			t.Errorf("%s is set: etcd's client port stays closed, and the member embedded", name)
		}
	}
	want := map[string]string{"BATON_HTTP_ADDR": "0.0.0.0:8080", "BATON_LISTEN_PEER_URL": "http://0.0.0.0:2380"}
	for name, v := range want {
		if env[name] != v {
			t.Errorf("%s %q, want %q (the container's ports)", name, env[name], v)
		}
	}
	checkFiles(t, sts, c, env)
	checkAllowedHosts(t, env, ns)
	checkProbes(t, c)
	checkSecurity(t, pod, c)
	checkResources(t, c)
	checkPlacement(t, pod, labels.Set(sts.Spec.Template.Labels))
	shutdown, err := time.ParseDuration(env["BATON_SHUTDOWN_TIMEOUT"])
	if err != nil {
		t.Fatalf("BATON_SHUTDOWN_TIMEOUT: %v", err)
	}
	// After the drain, etcd's stop hands leadership over, for up to its
	// request timeout (5 s) and two election timeouts (1 s each).
	if g := pod.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < shutdown+7*time.Second {
		t.Errorf("terminationGracePeriodSeconds %v: want at least the shutdown timeout %s and 7 s for etcd's stop", g, shutdown)
	}
}

// checkFiles: the data dir lies in the claimed volume, and the auth file
// is the Secret's key "auth", mounted read-only.
func checkFiles(t *testing.T, sts *appsv1.StatefulSet, c corev1.Container, env map[string]string) {
	t.Helper()
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Fatal("want one volumeClaimTemplate, data")
	}
	claim := sts.Spec.VolumeClaimTemplates[0].Spec
	if !slices.Equal(claim.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}) || claim.Resources.Requests.Storage().IsZero() {
		t.Errorf("claim data: want ReadWriteOnce and a storage request: %+v", claim)
	}
	data := mountOf(t, c, "data")
	if d := env["BATON_DATA_DIR"]; path.Dir(d) != data.MountPath || data.ReadOnly {
		t.Errorf("BATON_DATA_DIR %q, want a directory right below the volume data at %s (writable)", d, data.MountPath)
	}
	v := authVolume(t, sts.Spec.Template.Spec)
	mount := mountOf(t, c, v.Name)
	if len(v.Secret.Items) != 1 || v.Secret.Items[0].Key != "auth" || (v.Secret.Optional != nil && *v.Secret.Optional) {
		t.Errorf("secret volume %s: want the key auth alone, not optional", v.Name)
	} else if f := path.Join(mount.MountPath, v.Secret.Items[0].Path); env["BATON_AUTH_FILE"] != f || !mount.ReadOnly {
		t.Errorf("BATON_AUTH_FILE %q, want the Secret's file %s, mounted read-only", env["BATON_AUTH_FILE"], f)
	}
	if m := v.Secret.DefaultMode; m == nil || *m&0o077&^0o040 != 0 {
		t.Errorf("secret volume mode %v: want owner read only (fsGroup adds the group's)", m)
	}
}

// authVolume returns the pod's one Secret volume.
func authVolume(t *testing.T, pod corev1.PodSpec) corev1.Volume {
	t.Helper()
	var found []corev1.Volume
	for _, v := range pod.Volumes {
		if v.Secret != nil {
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		t.Fatalf("secret volumes %v, want one, the auth file's", found)
	}
	return found[0]
}

// checkAllowedHosts: the API answers the Service's names and loopback
// (kubectl port-forward), and each entry is one baton accepts: a name or
// address without a port.
func checkAllowedHosts(t *testing.T, env map[string]string, ns string) {
	t.Helper()
	hosts := strings.Split(env["BATON_ALLOWED_HOSTS"], ",")
	for _, want := range []string{"baton", "baton." + ns + ".svc", "localhost", "127.0.0.1"} {
		if !slices.Contains(hosts, want) {
			t.Errorf("BATON_ALLOWED_HOSTS %v lacks %s", hosts, want)
		}
	}
	for _, h := range hosts {
		if _, _, err := net.SplitHostPort(h); err == nil || h == "" || strings.ContainsAny(h, "/*$()") {
			t.Errorf("BATON_ALLOWED_HOSTS entry %q: want a host name or address alone", h)
		}
	}
}

// checkPlacement: members spread over machines where they can.
func checkPlacement(t *testing.T, pod corev1.PodSpec, pods labels.Set) {
	t.Helper()
	a := pod.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		t.Fatal("no pod anti-affinity: the scheduler may put two members on one machine")
	}
	for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		if w.PodAffinityTerm.TopologyKey == corev1.LabelHostname {
			mustSelect(t, "anti-affinity", w.PodAffinityTerm.LabelSelector, pods)
			return
		}
	}
	t.Error("no preferred anti-affinity over kubernetes.io/hostname")
}

// checkMembers: for each pod the StatefulSet makes, baton-N, the name and
// peer URL it starts with are its entry in the initial cluster, which
// lists exactly the replicas, and the peer host is the pod's DNS name
// under the headless Service.
func checkMembers(t *testing.T, sts *appsv1.StatefulSet, ns string, replicas int, state string) {
	t.Helper()
	var want []string
	for i := range replicas {
		pod := fmt.Sprintf("%s-%d", sts.Name, i)
		env := podEnv(t, sts.Spec.Template.Spec.Containers[0], pod, ns, "10.1.2.3")
		peer := fmt.Sprintf("http://%s.%s.%s.svc:2380", pod, sts.Spec.ServiceName, ns)
		if env["BATON_NAME"] != pod || env["BATON_PEER_URL"] != peer {
			t.Errorf("pod %s: BATON_NAME %q, BATON_PEER_URL %q; want %s and %s", pod, env["BATON_NAME"], env["BATON_PEER_URL"], pod, peer)
		}
		if u, err := url.Parse(env["BATON_PEER_URL"]); err != nil || u.Port() != "2380" {
			t.Errorf("pod %s: peer URL %q: %v", pod, env["BATON_PEER_URL"], err)
		}
		if env["BATON_INITIAL_CLUSTER_STATE"] != state {
			t.Errorf("pod %s: BATON_INITIAL_CLUSTER_STATE %q, want %q", pod, env["BATON_INITIAL_CLUSTER_STATE"], state)
		}
		want = append(want, pod+"="+peer)
		if i == replicas-1 {
			if got := strings.Split(env["BATON_INITIAL_CLUSTER"], ","); !slices.Equal(got, want) {
				t.Errorf("BATON_INITIAL_CLUSTER %v, want %v: every replica, by its peer URL", got, want)
			}
		}
	}
}

// mustSelect fails unless sel is a valid selector that matches pods.
func mustSelect(t *testing.T, what string, sel *metav1.LabelSelector, pods labels.Set) {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() || !s.Matches(pods) {
		t.Errorf("%s: selector %v does not select the pods %v (%v)", what, sel, pods, err)
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
