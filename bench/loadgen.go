package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// loadgenEnv, when set, makes this binary a load generator (see doc.go).
const loadgenEnv = "BATON_BENCH_LOADGEN"

// The kinds of load a generator makes.
const (
	kindCycles     = "cycles"
	kindGateway    = "etcd-gateway"
	kindRedis      = "redis"
	kindContention = "contention"
	kindScale      = "scale"
)

// loadSpec tells a load generator what to do; the parent writes it as
// JSON on the generator's stdin.
type loadSpec struct {
	Kind string `json:"kind"`
	// URL is where the load goes; for kindRedis, the server's host:port,
	// and Password its AUTH password.
	URL      string        `json:"url"`
	Password string        `json:"password,omitempty"`
	Clients  int           `json:"clients"`
	Duration time.Duration `json:"duration"`
	// Prefix starts every lock name, so no two scenarios share a lock.
	Prefix string `json:"prefix"`
	// Session makes cycles take their locks in one session per client
	// instead of a lease per lock.
	Session bool `json:"session,omitempty"`
	// Sessions, Locks and Renew shape the scale scenario.
	Sessions int           `json:"sessions,omitempty"`
	Locks    int           `json:"locks,omitempty"`
	Renew    time.Duration `json:"renew,omitempty"`
}

// genMsg is one message from a load generator on its stdout: first
// Ready, then Report with the CPU time the generator spent since it was
// told to go (or Error at any point).
type genMsg struct {
	Ready  bool            `json:"ready,omitempty"`
	Report json.RawMessage `json:"report,omitempty"`
	CPU    time.Duration   `json:"cpu,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// loadgen is a load generator process, seen from the parent.
type loadgen struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *json.Decoder
	waited bool
}

// startLoadgen starts a generator for spec and returns once it has done
// its setup and waits for run. Call close when done with it.
func startLoadgen(ctx context.Context, spec loadSpec) (*loadgen, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary for the load generator: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), loadgenEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start load generator: %w", err)
	}
	lg := &loadgen{cmd: cmd, stdin: stdin, out: json.NewDecoder(stdout)}
	if err := json.NewEncoder(stdin).Encode(spec); err != nil {
		lg.close()
		return nil, fmt.Errorf("send load generator its spec: %w", err)
	}
	m, err := lg.next()
	if err == nil && !m.Ready {
		err = errors.New("load generator answered without saying it was ready")
	}
	if err != nil {
		lg.close()
		return nil, err
	}
	return lg, nil
}

func (lg *loadgen) next() (genMsg, error) {
	var m genMsg
	if err := lg.out.Decode(&m); err != nil {
		// Most likely it died; its exit status says more than the EOF.
		// Kill first in case it did not: Wait would block on it forever.
		lg.cmd.Process.Kill()
		if werr := lg.wait(); werr != nil {
			return m, fmt.Errorf("load generator: %w", werr)
		}
		return m, fmt.Errorf("read load generator: %w", err)
	}
	if m.Error != "" {
		return m, fmt.Errorf("load generator: %s", m.Error)
	}
	return m, nil
}

// run tells the generator to go, decodes its report into report and
// returns the CPU time it spent. Closing its stdin is the signal: there is
// nothing else to say to it.
func (lg *loadgen) run(report any) (time.Duration, error) {
	if err := lg.stdin.Close(); err != nil {
		return 0, err
	}
	m, err := lg.next()
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(m.Report, report); err != nil {
		return 0, fmt.Errorf("decode load generator's report: %w", err)
	}
	return m.CPU, nil
}

// wait waits for the generator to clean up and exit.
func (lg *loadgen) wait() error {
	if lg.waited {
		return nil
	}
	lg.waited = true
	lg.stdin.Close()
	return lg.cmd.Wait()
}

// close stops a generator that is still running.
func (lg *loadgen) close() {
	if !lg.waited {
		lg.cmd.Process.Kill()
		lg.wait()
	}
}

// loadgenMain is a load generator's main: it reads its spec from stdin and
// talks to the parent as genMsg values on stdout.
func loadgenMain(stdin io.Reader, stdout io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := &parentConn{in: stdin, enc: json.NewEncoder(stdout)}
	if err := generate(ctx, p); err != nil {
		p.enc.Encode(genMsg{Error: err.Error()})
		return 1
	}
	return 0
}

func generate(ctx context.Context, p *parentConn) error {
	var spec loadSpec
	if err := json.NewDecoder(p.in).Decode(&spec); err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	switch spec.Kind {
	case kindCycles:
		return genCycles(ctx, spec, p)
	case kindGateway:
		return genGateway(ctx, spec, p)
	case kindRedis:
		return genRedis(ctx, spec, p)
	case kindContention:
		return genContention(ctx, spec, p)
	case kindElection:
		return genElection(ctx, spec, p)
	case kindEtcdElection:
		return genEtcdElection(ctx, spec, p)
	case kindEtcdMutex:
		return genEtcdMutex(ctx, spec, p)
	case kindEtcdMutexContention:
		return genEtcdMutexContention(ctx, spec, p)
	case kindSemaphore:
		return genSemaphore(ctx, spec, p)
	case kindRWLock:
		return genRWLock(ctx, spec, p)
	case kindLockSet, kindOneByOne:
		return genLockSets(ctx, spec, p)
	case kindScale:
		return genScale(ctx, spec, p)
	}
	return fmt.Errorf("unknown load kind %q", spec.Kind)
}

// parentConn is the parent, seen from a load generator.
type parentConn struct {
	in    io.Reader
	enc   *json.Encoder
	cpuGo time.Duration // our CPU time when told to go
}

// ready says setup is done and returns once the parent, having read its
// counters, says go by closing our stdin.
func (p *parentConn) ready() error {
	if err := p.enc.Encode(genMsg{Ready: true}); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, p.in); err != nil {
		return err
	}
	var err error
	p.cpuGo, err = processCPU()
	return err
}

func (p *parentConn) report(v any) error {
	cpu, err := processCPU()
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return p.enc.Encode(genMsg{Report: b, CPU: cpu - p.cpuGo})
}
