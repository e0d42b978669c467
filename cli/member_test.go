package cli_test

import (
	"strings"
	"testing"

	"github.com/baton-dev/baton/node"
	"github.com/baton-dev/baton/tests/testetcd"
)

// TestMember_TakesTheNodeByAddrAsEveryCommandDoes: member asks the baton
// node that --addr or BATON_ADDR names for its members' client URLs, so
// an operator names the cluster the way every other command does.
func TestMember_TakesTheNodeByAddrAsEveryCommandDoes(t *testing.T) {
	var clientURL string
	n := startNode(t, func(c *node.Config) { clientURL = c.ClientURL })
	out, errs, code := runEnv(t, nil, "member", "list", "--addr", n.URL())
	if code != 0 || !strings.Contains(out, "n1") || !strings.Contains(out, clientURL) {
		t.Fatalf("member list --addr: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = runEnv(t, []string{"BATON_ADDR=" + n.URL()}, "member", "list", "-o", "json")
	if code != 0 || !strings.Contains(out, `"n1"`) {
		t.Fatalf("member list with BATON_ADDR: exit %d\n%s%s", code, out, errs)
	}
	// etcd's own variable names the members outright, over BATON_ADDR.
	out, errs, code = runEnv(t, []string{"BATON_ADDR=http://127.0.0.1:1", "BATON_ETCD_ENDPOINTS=" + clientURL}, "member", "list")
	if code != 0 || !strings.Contains(out, "n1") {
		t.Fatalf("member list with BATON_ETCD_ENDPOINTS beside BATON_ADDR: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := runEnv(t, nil, "member", "list", "--addr", n.URL(), "--etcd-endpoints", clientURL); code != 2 || !strings.Contains(errs, "not both") {
		t.Fatalf("member list with --addr and --etcd-endpoints: exit %d, stderr %q; want 2, not both", code, errs)
	}
}

// TestMember_RefusesAnEtcdThatHoldsNoBatonData: the default endpoint, or
// a mistyped one, may reach someone else's etcd; member neither lists nor
// changes its members as baton's.
func TestMember_RefusesAnEtcdThatHoldsNoBatonData(t *testing.T) {
	cfg := testetcd.Config(t)
	m := testetcd.StartConfig(t, cfg)
	other := cfg.ClientURL
	for _, args := range [][]string{
		{"member", "list", "--etcd-endpoints", other},
		{"member", "add", "n2", "http://127.0.0.1:2", "--etcd-endpoints", other},
		{"member", "remove", "test", "--etcd-endpoints", other},
	} {
		out, errs, code := runEnv(t, nil, args...)
		if code != 2 || !strings.Contains(errs, "holds no baton data") || out != "" {
			t.Errorf("baton %v: exit %d, stdout %q, stderr %q; want 2 and \"holds no baton data\"", args, code, out, errs)
		}
	}
	resp, err := m.Client().MemberList(t.Context())
	if err != nil || len(resp.Members) != 1 {
		t.Fatalf("the other etcd's members after the refusals: %v, %v; want its one member", resp, err)
	}
}
