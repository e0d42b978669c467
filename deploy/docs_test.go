package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// overlayFiles returns the files of the overlay that docs/CLUSTER.md's "On
// Kubernetes" builds, after each of its blocks that begins with a
// "# my-baton/FILE" line ("# my-baton/FILE, added" adds to FILE), in
// order, with the base's path as the docs give it (a checkout beside the
// overlay) replaced by BASE.
func overlayFiles(t *testing.T) (steps []map[string]string, section string) {
	t.Helper()
	b, err := os.ReadFile("../docs/CLUSTER.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## On Kubernetes\n")
	if !ok {
		t.Fatal(`docs/CLUSTER.md has no "## On Kubernetes" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	header := regexp.MustCompile(`^( +)# my-baton/(\S+?)(, added)?$`)
	files := map[string]string{}
	lines := strings.Split(section, "\n")
	for i := 0; i < len(lines); i++ {
		m := header.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, name := m[1], m[2]
		var block []string
		for i++; i < len(lines) && (lines[i] == "" || strings.HasPrefix(lines[i], indent)); i++ {
			block = append(block, strings.TrimPrefix(lines[i], indent))
		}
		text := strings.TrimRight(strings.Join(block, "\n"), "\n") + "\n"
		if m[3] == "" {
			files[name] = text
		} else {
			files[name] += text
		}
		step := map[string]string{}
		for n, f := range files {
			step[n] = strings.ReplaceAll(f, "../baton/deploy/kubernetes", "BASE")
		}
		steps = append(steps, step)
	}
	if len(steps) < 3 {
		t.Fatalf("docs/CLUSTER.md: %d overlay blocks, want the install's kustomization.yaml, members.yaml and its patch", len(steps))
	}
	return steps, section
}

// TestDocs_InstallOverlayRendersThreeMembersOfTheImageGiven renders the
// overlay as docs/CLUSTER.md has users write it for the install.
func TestDocs_InstallOverlayRendersThreeMembersOfTheImageGiven(t *testing.T) {
	steps, _ := overlayFiles(t)
	m := render(t, overlay(t, steps[0]))
	sts := checkCluster(t, m, "baton", 3, "new")
	if got := sts.Spec.Template.Spec.Containers[0].Image; got != "registry.example.com/baton:1.0.0" || sts.Namespace != "baton" {
		t.Errorf("image %q in namespace %q, want the docs' registry.example.com/baton:1.0.0 in baton", got, sts.Namespace)
	}
}

// TestDocs_GrowingToFourThenFiveKeepsEveryMemberInTheInitialCluster
// renders the docs' overlay for baton-3, and for baton-4 as the docs say
// ("replicas: 5" and baton-4 appended to the list), and checks that the
// peer URL each "baton member add" of the docs registers is the one that
// pod will advertise.
func TestDocs_GrowingToFourThenFiveKeepsEveryMemberInTheInitialCluster(t *testing.T) {
	steps, section := overlayFiles(t)
	four := steps[len(steps)-1]
	checkCluster(t, render(t, overlay(t, four)), "baton", 4, "existing")

	five := map[string]string{}
	for n, f := range four {
		five[n] = f
	}
	entry := ",baton-4=http://baton-4.baton-peer.baton.svc:2380"
	if !strings.Contains(section, "`replicas: 5`") || !strings.Contains(section, "`"+entry+"`") {
		t.Fatalf("the docs no longer say how to go on to baton-4 with replicas: 5 and %s", entry)
	}
	five["members.yaml"] = strings.Replace(four["members.yaml"], "replicas: 4", "replicas: 5", 1)
	five["members.yaml"] = regexp.MustCompile(`(value: baton-0=\S+)`).ReplaceAllString(five["members.yaml"], "${1}"+entry)
	sts := checkCluster(t, render(t, overlay(t, five)), "baton", 5, "existing")

	adds := regexp.MustCompile(`baton member add (baton-\d)\s+(\S+?)`+"[`\n]").FindAllStringSubmatch(section, -1)
	if len(adds) != 2 {
		t.Fatalf("the docs show %d baton member add commands, want baton-3's and baton-4's", len(adds))
	}
	for _, a := range adds {
		env := podEnv(t, sts.Spec.Template.Spec.Containers[0], a[1], "baton", "10.1.2.3")
		if env["BATON_PEER_URL"] != a[2] {
			t.Errorf("the docs add %s at %s; the pod will advertise %s", a[1], a[2], env["BATON_PEER_URL"])
		}
	}
}
