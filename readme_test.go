package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/baton-dev/baton/tests/testcluster"
)

// readmeAddr is the address the README's walkthrough talks to: baton's
// default. The test points it at its own node.
const readmeAddr = "localhost:8080"

// walkStep is one command of the walkthrough with what the README says it
// answers.
type walkStep struct {
	command  string   // shell text, continuation lines included
	status   string   // the "# NNN" line under it
	codes    []string // problem codes its "# {…}" lines show
	captures []string // variables it assigns with NAME=$(…)
}

var (
	statusLine = regexp.MustCompile(`^# (\d{3})$`)
	codeMember = regexp.MustCompile(`"code":"([a-z_]+)"`)
	capture    = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)=\$\(`)
)

// readmeSection is the text of README.md's "## heading" section.
func readmeSection(t *testing.T, readme, heading string) string {
	t.Helper()
	_, section, ok := strings.Cut(readme, "\n## "+heading+"\n")
	if !ok {
		t.Fatalf(`README.md has no "## %s" section`, heading)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	return section
}

// walkthrough returns the steps of the shell blocks of README.md's "Try
// it" section.
func walkthrough(t *testing.T, readme string) []walkStep {
	t.Helper()
	return shellSteps(t, readmeSection(t, readme, "Try it"))
}

// shellSteps returns the steps of text's shell blocks (indented by four
// spaces).
func shellSteps(t *testing.T, text string) []walkStep {
	t.Helper()
	var steps []walkStep
	continued := false
	for _, line := range strings.Split(text, "\n") {
		code, ok := strings.CutPrefix(line, "    ")
		if !ok {
			continued = false
			continue
		}
		switch {
		case continued:
			s := &steps[len(steps)-1]
			s.command += "\n" + code
		case strings.HasPrefix(code, "#"):
			if len(steps) == 0 {
				t.Fatalf("README walkthrough: comment %q before any command", code)
			}
			s := &steps[len(steps)-1]
			if m := statusLine.FindStringSubmatch(code); m != nil {
				s.status = m[1]
			}
			for _, m := range codeMember.FindAllStringSubmatch(code, -1) {
				s.codes = append(s.codes, m[1])
			}
		default:
			steps = append(steps, walkStep{command: code})
			if m := capture.FindStringSubmatch(code); m != nil {
				steps[len(steps)-1].captures = append(steps[len(steps)-1].captures, m[1])
			}
		}
		continued = strings.HasSuffix(code, `\`)
	}
	return steps
}

// TestREADME_TryItWalkthroughRunsAsWritten pastes the README's walkthrough
// into bash against a real baton process on a fresh data dir, with the
// README's address rewritten to the node's, and checks that every step
// answers the status its "# NNN" line shows, with the problem code it
// shows, and that every variable it keeps is set.
func TestREADME_TryItWalkthroughRunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs baton as a process")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: the README's walkthrough is a bash session")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the README's walkthrough runs curl")
	}
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := walkthrough(t, string(b))
	if len(steps) < 5 {
		t.Fatalf("README walkthrough has %d steps; the parser lost them", len(steps))
	}
	checkWalkthroughSteps(t, steps)
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 1})
	out := runWalkthrough(t, bash, steps, c.Nodes[0].HTTPAddr)
	t.Logf("walkthrough transcript:\n%s", out)
	for i, output := range splitTranscript(out, len(steps)) {
		checkWalkthroughAnswer(t, i, steps[i], output)
	}
	pasteAgainLeavesTheHolderAlone(t, bash, steps, c.Nodes[0].HTTPAddr, out)
}

// pasteAgainLeavesTheHolderAlone pastes the walkthrough a second time,
// while the first paste's last holder (NEW) still holds the lock: the
// second paste is refused, and keeps no other holder's token from the
// refusal, so nothing it sends renews or releases that lock.
func pasteAgainLeavesTheHolderAlone(t *testing.T, bash string, steps []walkStep, addr, first string) {
	t.Helper()
	m := regexp.MustCompile(`@@captured NEW=(\d+)`).FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("the first paste kept no NEW token:\n%s", first)
	}
	second := runWalkthrough(t, bash, steps, addr)
	if regexp.MustCompile(`@@captured (TOKEN|NEW)=\d`).MatchString(second) {
		t.Errorf("the second paste kept a token from a refusal:\n%s", second)
	}
	var l struct {
		Owner string `json:"owner"`
		Token int64  `json:"token"`
	}
	resp, err := http.Get("http://" + addr + "/v1/locks/nightly-recon")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != 200 || l.Owner != "w2" || fmt.Sprint(l.Token) != m[1] {
		t.Errorf("after the second paste nightly-recon is %d %+v (%v); want still w2's, token %s:\n%s", resp.StatusCode, l, err, m[1], second)
	}
}

// checkWalkthroughSteps fails the test unless every step can be checked:
// it talks to readmeAddr, says its status, and sends JSON as JSON.
func checkWalkthroughSteps(t *testing.T, steps []walkStep) {
	t.Helper()
	for i, s := range steps {
		if !strings.Contains(s.command, readmeAddr) {
			t.Errorf("README walkthrough step %d does not talk to %s, so this test cannot point it at its node:\n%s", i+1, readmeAddr, s.command)
		}
		if s.status == "" {
			t.Errorf("README walkthrough step %d has no \"# NNN\" line saying what status it answers:\n%s", i+1, s.command)
		}
		if strings.Contains(s.command, " -d ") && !strings.Contains(s.command, "-H 'Content-Type: application/json'") {
			t.Errorf("README walkthrough step %d sends a body without -H 'Content-Type: application/json':\n%s", i+1, s.command)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// runWalkthrough runs the steps in one bash against addr and returns what
// they printed, each step's output after an "@@step N" line and each
// captured variable on an "@@captured NAME=VALUE" line.
func runWalkthrough(t *testing.T, bash string, steps []walkStep, addr string) string {
	t.Helper()
	var script strings.Builder
	script.WriteString("exec 2>&1\n")
	for i, s := range steps {
		fmt.Fprintf(&script, "echo '@@step %d'\n%s\n", i, strings.ReplaceAll(s.command, readmeAddr, addr))
		for _, v := range s.captures {
			fmt.Fprintf(&script, "echo \"@@captured %s=${%s}\"\n", v, v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "--noprofile", "--norc", "-u")
	cmd.Stdin = strings.NewReader(script.String())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash: %v\n%s", err, out.String())
	}
	return out.String()
}

// splitTranscript returns the non-empty lines each of n steps printed.
func splitTranscript(out string, n int) [][]string {
	outputs := make([][]string, n)
	cur := -1
	for _, line := range strings.Split(out, "\n") {
		var i int
		if _, err := fmt.Sscanf(line, "@@step %d", &i); err == nil {
			cur = i
			continue
		}
		if cur < 0 || strings.TrimSpace(line) == "" {
			continue
		}
		outputs[cur] = append(outputs[cur], line)
	}
	return outputs
}

// checkWalkthroughAnswer checks step i's output against what the README
// shows for it: its status last, its problem codes, its variables set.
func checkWalkthroughAnswer(t *testing.T, i int, s walkStep, output []string) {
	t.Helper()
	var answer []string
	captured := map[string]string{}
	for _, line := range output {
		if kv, ok := strings.CutPrefix(line, "@@captured "); ok {
			k, v, _ := strings.Cut(kv, "=")
			captured[k] = v
			continue
		}
		answer = append(answer, line)
	}
	shown := strings.Join(answer, "\n")
	if len(answer) == 0 || answer[len(answer)-1] != s.status {
		t.Errorf("README walkthrough step %d answered\n%s\nwant status %s; the step:\n%s", i+1, shown, s.status, s.command)
		return
	}
	for _, code := range s.codes {
		if !strings.Contains(shown, `"code":"`+code+`"`) {
			t.Errorf("README walkthrough step %d answered\n%s\nwant problem code %s", i+1, shown, code)
		}
	}
	for _, v := range s.captures {
		if captured[v] == "" {
			t.Errorf("README walkthrough step %d left %s empty; it answered\n%s", i+1, v, shown)
		}
	}
}

// readmeFlagTable returns the flags named in the first column of the
// table in README.md's "Running it" section, with the row naming each.
func readmeFlagTable(t *testing.T, readme string) map[string]string {
	t.Helper()
	section := readmeSection(t, readme, "Running it")
	flags := map[string]string{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range tableFlag.FindAllStringSubmatch(first, -1) {
			flags[m[1]] = line
		}
	}
	return flags
}

var tableFlag = regexp.MustCompile("`--([a-z0-9-]+)`")

// TestREADME_FlagTableNamesEveryServeFlag keeps README.md's flag table
// and the flags of "baton serve" in step: a flag added without its row,
// or a row left for a flag that is gone, fails here.
func TestREADME_FlagTableNamesEveryServeFlag(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	table := readmeFlagTable(t, string(b))
	if len(table) == 0 {
		t.Fatal(`README.md's "Running it" section has no flag table; the parser lost it`)
	}
	root := newRootCmd()
	serve, _, err := root.Find([]string{"serve"})
	if err != nil {
		t.Fatal(err)
	}
	serve.Flags().VisitAll(func(f *pflag.Flag) {
		if _, ok := table[f.Name]; !ok {
			t.Errorf("--%s has no row in README.md's flag table (Running it)", f.Name)
		}
	})
	for name, row := range table {
		if serve.Flags().Lookup(name) == nil {
			t.Errorf("README.md's flag table names --%s, which baton serve does not have:\n%s", name, row)
		}
	}
}

// useCaseCommand is a baton exec or baton elect line of the use cases,
// with the exit status the README gives it ("# exits N"; 0 if none).
type useCaseCommand struct {
	line string
	exit int
}

var exitsComment = regexp.MustCompile(`# exits (\d+)`)

// useCaseCommands returns the baton exec and baton elect lines of
// README.md's "Use cases" section, each with the command it runs (after
// " -- ") replaced by true.
func useCaseCommands(t *testing.T, readme string) []useCaseCommand {
	t.Helper()
	section := readmeSection(t, readme, "Use cases")
	var cmds []useCaseCommand
	for _, line := range strings.Split(section, "\n") {
		code, ok := strings.CutPrefix(line, "    ")
		if !ok || !strings.HasPrefix(code, "baton exec ") && !strings.HasPrefix(code, "baton elect ") {
			continue
		}
		before, after, ok := strings.Cut(code, " -- ")
		if !ok {
			t.Fatalf("README use case %q runs no command after --", code)
		}
		c := useCaseCommand{line: before + " -- true"}
		if m := exitsComment.FindStringSubmatch(after); m != nil {
			fmt.Sscan(m[1], &c.exit)
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// TestREADME_UseCaseCommandsRun runs every baton exec and baton elect of
// the use cases, in order, as written but for the job (true), against a
// real node: each takes what it asks for, runs the job and exits 0, or
// exits with the status its "# exits N" comment gives (the second host
// of the cron recipe, inside the first one's window). Their --wait
// reaches an hour, longer than one request's wait.
func TestREADME_UseCaseCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs baton as a process")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: the README's commands are shell lines")
	}
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := useCaseCommands(t, string(b))
	if len(cmds) < 5 {
		t.Fatalf("README use cases have %d baton exec and elect lines; the parser lost them", len(cmds))
	}
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 1})
	dir := t.TempDir()
	if err := os.Symlink(bin, dir+"/baton"); err != nil {
		t.Fatal(err)
	}
	for _, c0 := range cmds {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, bash, "--noprofile", "--norc", "-c", c0.line)
		cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "BATON_ADDR=http://"+c.Nodes[0].HTTPAddr)
		out, err := cmd.CombinedOutput()
		cancel()
		var ee *exec.ExitError
		switch {
		case err == nil && c0.exit != 0:
			t.Errorf("README use case %q exited 0, want %d\n%s", c0.line, c0.exit, out)
		case err != nil && !(errors.As(err, &ee) && ee.ExitCode() == c0.exit):
			t.Errorf("README use case %q: %v, want exit %d\n%s", c0.line, err, c0.exit, out)
		}
	}
}

// readmeBlock is the shell block of README.md's "## heading" section that
// follows the paragraph ending in intro.
func readmeBlock(t *testing.T, readme, heading, intro string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readmeSection(t, readme, heading), intro+"\n\n")
	if !ok {
		t.Fatalf("README.md's %q section has no %q", heading, intro)
	}
	var block []string
	for _, line := range strings.Split(rest, "\n") {
		if !strings.HasPrefix(line, "    ") {
			break
		}
		block = append(block, line)
	}
	return strings.Join(block, "\n")
}

// TestREADME_TheSameWithCurlRunsAsWritten runs the API section's curl
// session as the walkthrough's is run: each step answers the status it
// shows, and the token kept from the grant releases the lock.
func TestREADME_TheSameWithCurlRunsAsWritten(t *testing.T) {
	bash := readmeShell(t)
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps := shellSteps(t, readmeBlock(t, string(b), "Use it from any language", "The same with curl:"))
	if len(steps) != 3 {
		t.Fatalf("README's curl session has %d steps, want 3", len(steps))
	}
	checkWalkthroughSteps(t, steps)
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 1})
	out := runWalkthrough(t, bash, steps, c.Nodes[0].HTTPAddr)
	for i, output := range splitTranscript(out, len(steps)) {
		checkWalkthroughAnswer(t, i, steps[i], output)
	}
}

// TestREADME_UseCaseRequestsRunAsWritten pastes the curl lines of the use
// cases, in order, into one bash against a real node: each must succeed
// (curl -f: no 4xx or 5xx), and every token a line keeps must be set.
// A stream (curl -N) is cut after a second.
func TestREADME_UseCaseRequestsRunAsWritten(t *testing.T) {
	bash := readmeShell(t)
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	var steps []walkStep
	for _, s := range shellSteps(t, readmeSection(t, string(b), "Use cases")) {
		if strings.Contains(s.command, "curl ") {
			steps = append(steps, s)
		}
	}
	if len(steps) < 10 {
		t.Fatalf("README use cases have %d curl lines; the parser lost them", len(steps))
	}
	c := testcluster.Start(t, testcluster.Options{Bin: bin, Nodes: 1})
	var script strings.Builder
	script.WriteString("set -o pipefail\n")
	for i, s := range steps {
		cmd := strings.ReplaceAll(s.command, readmeAddr, c.Nodes[0].HTTPAddr)
		stream := strings.Contains(cmd, "curl -sN ")
		cmd = strings.Replace(strings.Replace(cmd, "curl -sN ", "curl -sfN --max-time 1 ", 1), "curl -s ", "curl -sf ", 1)
		fmt.Fprintf(&script, "%s\nrc=$?\n", cmd)
		if stream {
			script.WriteString("[ $rc = 28 ] && rc=0\n") // cut by --max-time, as meant
		}
		fmt.Fprintf(&script, "echo \"@@exit %d $rc\"\n", i)
		for _, v := range s.captures {
			fmt.Fprintf(&script, "echo \"@@captured %d %s=${%s}\"\n", i, v, v)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "--noprofile", "--norc")
	cmd.Stdin = strings.NewReader(script.String())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash: %v\n%s", err, out)
	}
	for i, s := range steps {
		if !strings.Contains(string(out), fmt.Sprintf("@@exit %d 0\n", i)) {
			t.Errorf("README use case request %d failed:\n%s\ntranscript:\n%s", i+1, s.command, out)
		}
		for _, v := range s.captures {
			if m := regexp.MustCompile(fmt.Sprintf(`@@captured %d %s=(\d+)`, i, v)).FindStringSubmatch(string(out)); m == nil {
				t.Errorf("README use case request %d left %s without a token:\n%s", i+1, v, out)
			}
		}
	}
}

// readmeShell is bash, for tests that paste the README's shell lines,
// skipping the test where they cannot run.
func readmeShell(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs baton as a process")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed: the README's commands are shell lines")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed: the README's commands run curl")
	}
	return bash
}
