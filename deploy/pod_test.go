package deploy

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// serveFlags are the flags of "baton serve", from the golden file that the
// root module's TestServeFlags keeps in step with the binary.
func serveFlags(t *testing.T) map[string]bool {
	t.Helper()
	f, err := os.Open("../testdata/serve-flags.golden")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	flags := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		// The "# name type default" section: one flag a line, unindented.
		if name, ok := strings.CutPrefix(s.Text(), "--"); ok {
			flags[strings.Fields(name)[0]] = true
		}
	}
	if err := s.Err(); err != nil || len(flags) == 0 {
		t.Fatalf("no flags read from serve-flags.golden (%v)", err)
	}
	return flags
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// podEnv is the environment Kubernetes gives container c in the pod named
// pod of namespace ns whose address is ip: the downward API's fields, and
// every $(NAME) expanded from the variables listed before it, as the
// kubelet does. A reference to a variable not listed before would reach
// baton as it is written, so it fails the test, as does an environment
// variable of baton's that names no flag of "baton serve".
func podEnv(t *testing.T, c corev1.Container, pod, ns, ip string) map[string]string {
	t.Helper()
	fields := map[string]string{"metadata.name": pod, "metadata.namespace": ns, "status.podIP": ip}
	flags := serveFlags(t)
	env := map[string]string{}
	for _, e := range c.Env {
		if errs := validation.IsEnvVarName(e.Name); len(errs) > 0 {
			t.Errorf("env %s: %v", e.Name, errs)
		}
		if _, dup := env[e.Name]; dup {
			t.Errorf("env %s is listed twice", e.Name)
		}
		if flag, ok := strings.CutPrefix(e.Name, "BATON_"); ok && !flags[strings.ToLower(strings.ReplaceAll(flag, "_", "-"))] {
			t.Errorf("env %s is the twin of no flag of baton serve (testdata/serve-flags.golden)", e.Name)
		}
		if e.ValueFrom != nil {
			v, ok := "", e.ValueFrom.FieldRef != nil
			if ok {
				v, ok = fields[e.ValueFrom.FieldRef.FieldPath]
			}
			if !ok {
				t.Errorf("env %s: a source the tests do not know: %+v", e.Name, e.ValueFrom)
			}
			env[e.Name] = v
			continue
		}
		env[e.Name] = varRef.ReplaceAllStringFunc(e.Value, func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := env[name]
			if !ok {
				t.Errorf("env %s refers to $(%s), which is not listed before it: Kubernetes would pass %q as it is", e.Name, name, ref)
			}
			return v
		})
	}
	return env
}

// mountOf returns the mount of the volume named volume in c, or fails.
func mountOf(t *testing.T, c corev1.Container, volume string) corev1.VolumeMount {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if m.Name == volume {
			return m
		}
	}
	t.Fatalf("container %s does not mount the volume %s", c.Name, volume)
	return corev1.VolumeMount{}
}

// checkProbes: ready is /readyz; alive is /healthz, with room for a member
// that has no leader (it still answers there); and the startup probe
// outlasts a member's wait for a quorum (a minute, then it exits).
func checkProbes(t *testing.T, c corev1.Container) {
	t.Helper()
	probes := []struct {
		what      string
		p         *corev1.Probe
		path      string
		minWindow int32 // seconds of failures before the kubelet acts
	}{
		{"readinessProbe", c.ReadinessProbe, "/readyz", 0},
		{"livenessProbe", c.LivenessProbe, "/healthz", 30},
		{"startupProbe", c.StartupProbe, "/healthz", 120},
	}
	for _, pr := range probes {
		if pr.p == nil || pr.p.HTTPGet == nil {
			t.Errorf("%s: want an HTTP GET of %s", pr.what, pr.path)
			continue
		}
		if g := pr.p.HTTPGet; g.Path != pr.path || g.Port.String() != "http" {
			t.Errorf("%s: GET %s on port %s, want %s on http", pr.what, g.Path, g.Port.String(), pr.path)
		}
		if w := pr.p.PeriodSeconds * pr.p.FailureThreshold; w < pr.minWindow {
			t.Errorf("%s: fails a pod after %d s, want at least %d s", pr.what, w, pr.minWindow)
		}
		// /readyz answers 503 within 2 s when etcd does not answer.
		if pr.p.TimeoutSeconds != 0 && pr.p.TimeoutSeconds < 3 {
			t.Errorf("%s: timeout %d s, shorter than /readyz's own 2 s bound", pr.what, pr.p.TimeoutSeconds)
		}
	}
}

// checkSecurity: non-root as the image's user (65532), no privilege
// gained or kept, a read-only root, seccomp's default profile.
func checkSecurity(t *testing.T, pod corev1.PodSpec, c corev1.Container) {
	t.Helper()
	ps := pod.SecurityContext
	if ps == nil {
		t.Fatal("the pod has no securityContext")
	}
	is := func(p *int64, v int64) bool { return p != nil && *p == v }
	yes := func(p *bool) bool { return p != nil && *p }
	if !yes(ps.RunAsNonRoot) || !is(ps.RunAsUser, 65532) || !is(ps.RunAsGroup, 65532) || !is(ps.FSGroup, 65532) {
		t.Errorf("pod securityContext: want runAsNonRoot, runAsUser, runAsGroup and fsGroup 65532 (the image's user): %+v", ps)
	}
	if ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext: want seccompProfile RuntimeDefault")
	}
	cs := c.SecurityContext
	if cs == nil || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation || !yes(cs.ReadOnlyRootFilesystem) ||
		cs.Capabilities == nil || len(cs.Capabilities.Drop) != 1 || cs.Capabilities.Drop[0] != "ALL" || len(cs.Capabilities.Add) != 0 || yes(cs.Privileged) {
		t.Errorf("container securityContext: want allowPrivilegeEscalation false, readOnlyRootFilesystem, capabilities drop ALL and none added: %+v", cs)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token: baton never calls the Kubernetes API")
	}
	if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
		t.Error("service links are on: they would put BATON_SERVICE_HOST and the like beside baton's BATON_ flags")
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("the pod shares a namespace of its node")
	}
}

// checkResources: requests so the scheduler places members where they
// fit, and no CPU limit, whose throttling would cost Raft heartbeats.
func checkResources(t *testing.T, c corev1.Container) {
	t.Helper()
	r := c.Resources
	if r.Requests.Cpu().IsZero() || r.Requests.Memory().IsZero() {
		t.Errorf("want CPU and memory requests: %v", r.Requests)
	}
	if _, ok := r.Limits[corev1.ResourceCPU]; ok {
		t.Error("a CPU limit throttles a member into missed heartbeats and elections")
	}
	if m, ok := r.Limits[corev1.ResourceMemory]; ok && m.Cmp(*r.Requests.Memory()) < 0 {
		t.Errorf("memory limit %s below the request %s", m.String(), r.Requests.Memory())
	}
}
