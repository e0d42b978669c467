package testcluster

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/baton-dev/baton/tests/hostnet"
)

// network is a private bridge with one network namespace per node. The
// test process sits on the bridge too (its address ends in .254), so it
// reaches every node while Partition drops traffic between nodes.
type network struct {
	id     string // short, unique on the machine: names must fit IFNAMSIZ
	subnet string // "10.213.X"
	nodes  int
	// forwarding says iptables holds the rule that accepts what crosses
	// the bridge (allowForwarding).
	forwarding bool
}

func newNetwork(nodes int) (*network, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("not root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, err
	}
	nw := &network{id: fmt.Sprintf("%d%d", os.Getpid()%100000, rand.IntN(100)), nodes: nodes}
	// A /24 no other interface uses; two test binaries may run at once.
	for range 50 {
		s := fmt.Sprintf("10.213.%d", 1+rand.IntN(250))
		if out, _ := exec.Command("ip", "-o", "route", "show", s+".0/24").Output(); len(strings.TrimSpace(string(out))) == 0 {
			nw.subnet = s
			break
		}
	}
	if nw.subnet == "" {
		return nil, fmt.Errorf("no free 10.213.X.0/24")
	}
	// The host's side of the network (the bridge, the veths' ends) gets
	// no IPv6 link-local address: the kernel would add it a moment after
	// the link comes up, outside Change, where a browser sees it.
	steps := [][]string{
		{"link", "add", nw.bridge(), "type", "bridge"},
		{"link", "set", nw.bridge(), "addrgenmode", "none"},
		{"addr", "add", nw.subnet + ".254/24", "dev", nw.bridge()},
		{"link", "set", nw.bridge(), "up"},
	}
	for i := range nodes {
		steps = append(steps,
			[]string{"netns", "add", nw.ns(i)},
			[]string{"link", "add", nw.veth(i), "type", "veth", "peer", "name", "eth0", "netns", nw.ns(i)},
			[]string{"link", "set", nw.veth(i), "addrgenmode", "none"},
			[]string{"link", "set", nw.veth(i), "master", nw.bridge(), "up"},
			[]string{"-n", nw.ns(i), "addr", "add", nw.ip(i) + "/24", "dev", "eth0"},
			[]string{"-n", nw.ns(i), "link", "set", "eth0", "up"},
			[]string{"-n", nw.ns(i), "link", "set", "lo", "up"},
		)
	}
	// A browser test beside this one would see the bridge's address
	// come, and lose its requests in flight (tests/hostnet).
	err := hostnet.Change(func() error {
		for _, s := range steps {
			if err := ip(s...); err != nil {
				return err
			}
		}
		// The bridge's carrier comes up after its ports': let that
		// change happen under Change too.
		return nw.awaitUp()
	})
	if err != nil {
		nw.close()
		return nil, err
	}
	if err := nw.allowForwarding(); err != nil {
		nw.close()
		return nil, &brokenNetworkError{err}
	}
	return nw, nil
}

// brokenNetworkError says the namespaces were made but their traffic
// cannot pass: a machine to fix, not one to skip the tests on.
type brokenNetworkError struct{ err error }

func (e *brokenNetworkError) Error() string { return e.err.Error() }

// bridgeNetfilter is 1 where frames crossing a bridge pass iptables
// (br_netfilter is loaded, as Docker loads it).
const bridgeNetfilter = "/proc/sys/net/bridge/bridge-nf-call-iptables"

// allowForwarding makes sure traffic between the nodes' namespaces passes.
// Where bridged frames pass iptables, the FORWARD chain judges it, and
// Docker sets that chain's policy to DROP: every dial between nodes then
// times out, an error that names neither cause. So the network accepts
// its own bridge's traffic first in the chain (close deletes the rule),
// and without an iptables command to do so it fails at once, saying why.
func (nw *network) allowForwarding() error {
	b, err := os.ReadFile(bridgeNetfilter)
	if err != nil || strings.TrimSpace(string(b)) != "1" {
		return nil // bridged frames do not pass iptables
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("%s is 1 (br_netfilter is loaded, as Docker loads it), so traffic between the test's network namespaces passes iptables' FORWARD chain, "+
			"and there is no iptables command to accept it there: install iptables, or set net.bridge.bridge-nf-call-iptables=0", bridgeNetfilter)
	}
	if out, err := exec.Command("iptables", nw.forwardRule("-I")...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s is 1, so traffic between the test's network namespaces passes iptables' FORWARD chain, and accepting it there failed: iptables: %v: %s",
			bridgeNetfilter, err, strings.TrimSpace(string(out)))
	}
	nw.forwarding = true
	return nil
}

// forwardRule is the iptables command, with verb -I or -D, of the rule
// that accepts what crosses the network's bridge.
func (nw *network) forwardRule(verb string) []string {
	rule := []string{"FORWARD", "-i", nw.bridge(), "-o", nw.bridge(), "-j", "ACCEPT"}
	if verb == "-I" {
		rule = slices.Insert(rule, 1, "1")
	}
	return append([]string{verb}, rule...)
}

func (nw *network) bridge() string    { return "btb" + nw.id }
func (nw *network) veth(i int) string { return fmt.Sprintf("btv%s%d", nw.id, i) }
func (nw *network) ns(i int) string   { return fmt.Sprintf("baton-%s-%d", nw.id, i) }
func (nw *network) ip(i int) string   { return fmt.Sprintf("%s.%d", nw.subnet, i+1) }

// blackhole drops (or stops dropping) what node from sends to node to.
func (nw *network) blackhole(from, to int, on bool) error {
	verb := "add"
	if !on {
		verb = "del"
		// Heal removes routes that may not be there.
		if out, _ := exec.Command("ip", "-n", nw.ns(from), "route", "show", "type", "blackhole", nw.ip(to)).Output(); len(out) == 0 {
			return nil
		}
	}
	return ip("-n", nw.ns(from), "route", verb, "blackhole", nw.ip(to)+"/32")
}

// close removes the namespaces (which takes their veths along) and the
// bridge. It is best effort: a half-built network is closed too.
func (nw *network) close() {
	hostnet.Change(func() error {
		for i := range nw.nodes {
			// Deleting a veth takes its peer along at once; a namespace
			// is torn down later, by the kernel, after Change.
			exec.Command("ip", "link", "del", nw.veth(i)).Run()
			exec.Command("ip", "netns", "del", nw.ns(i)).Run()
		}
		exec.Command("ip", "link", "del", nw.bridge()).Run()
		return nil
	})
	if nw.forwarding {
		exec.Command("iptables", nw.forwardRule("-D")...).Run()
	}
}

// awaitUp waits until the bridge and the host's ends of the veths are
// up (operstate), or says which is not after five seconds.
func (nw *network) awaitUp() error {
	links := []string{nw.bridge()}
	for i := range nw.nodes {
		links = append(links, nw.veth(i))
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, l := range links {
		for {
			b, err := os.ReadFile(filepath.Join("/sys/class/net", l, "operstate"))
			if err == nil && strings.TrimSpace(string(b)) == "up" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s is not up after 5s (operstate %q, %v)", l, strings.TrimSpace(string(b)), err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
