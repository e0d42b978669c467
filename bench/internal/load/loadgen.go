package load

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

	"github.com/baton-dev/baton/bench/internal/measure"
)

// Env, when set, makes the bench's binary a load generator: its main
// calls Main instead of running the bench.
const Env = "BATON_BENCH_LOADGEN"

// Spec tells a load generator what to do; the parent writes it as
// JSON on the generator's stdin.
type Spec struct {
	// Kind names the load; the bench's main dispatches on it.
	Kind string `json:"kind"`
	// URL is where the load goes; for the redis peer, the server's
	// host:port, and Password its AUTH password.
	URL      string        `json:"url"`
	Password string        `json:"password,omitempty"`
	Clients  int           `json:"clients"`
	Duration time.Duration `json:"duration"`
	// Prefix starts every lock name, so no two scenarios share a lock.
	Prefix string `json:"prefix"`
	// Session makes cycles take their locks in one session per client
	// instead of a lease per lock.
	Session bool `json:"session,omitempty"`
	// Value is what the keys scenario writes: a key's JSON value.
	Value []byte `json:"value,omitempty"`
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

// Generator is a load generator process, seen from the parent.
type Generator struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *json.Decoder
	waited bool
}

// Start starts a generator for spec and returns once it has done its
// setup and waits for Run. Call Close when done with it. The generator is
// this process's own binary, run again with Env set: its main must then
// call Main (the bench's main does, and so does its TestMain).
func Start(ctx context.Context, spec Spec) (*Generator, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own binary for the load generator: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), Env+"=1")
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
	lg := &Generator{cmd: cmd, stdin: stdin, out: json.NewDecoder(stdout)}
	if err := json.NewEncoder(stdin).Encode(spec); err != nil {
		lg.Close()
		return nil, fmt.Errorf("send load generator its spec: %w", err)
	}
	m, err := lg.next()
	if err == nil && !m.Ready {
		err = errors.New("load generator answered without saying it was ready")
	}
	if err != nil {
		lg.Close()
		return nil, err
	}
	return lg, nil
}

func (lg *Generator) next() (genMsg, error) {
	var m genMsg
	if err := lg.out.Decode(&m); err != nil {
		// Most likely it died; its exit status says more than the EOF.
		// Kill first in case it did not: Wait would block on it forever.
		lg.cmd.Process.Kill()
		if werr := lg.Wait(); werr != nil {
			return m, fmt.Errorf("load generator: %w", werr)
		}
		return m, fmt.Errorf("read load generator: %w", err)
	}
	if m.Error != "" {
		return m, fmt.Errorf("load generator: %s", m.Error)
	}
	return m, nil
}

// Run tells the generator to go, decodes its report into report and
// returns the CPU time it spent. Closing its stdin is the signal: there is
// nothing else to say to it.
func (lg *Generator) Run(report any) (time.Duration, error) {
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

// Wait waits for the generator to clean up and exit.
func (lg *Generator) Wait() error {
	if lg.waited {
		return nil
	}
	lg.waited = true
	lg.stdin.Close()
	return lg.cmd.Wait()
}

// Close stops a generator that is still running.
func (lg *Generator) Close() {
	if !lg.waited {
		lg.cmd.Process.Kill()
		lg.Wait()
	}
}

// Measured runs a load generator for spec, decodes its report into
// report, and returns what the scenario consumed. It returns once the
// generator has exited, so whatever it cleans up is gone before the next
// scenario starts.
func Measured(ctx context.Context, spec Spec, report any) (measure.Spent, error) {
	lg, err := Start(ctx, spec)
	if err != nil {
		return measure.Spent{}, err
	}
	defer lg.Close()
	u, err := measure.Measured(func() (time.Duration, error) { return lg.Run(report) })
	if err != nil {
		return measure.Spent{}, err
	}
	if err := lg.Wait(); err != nil {
		return measure.Spent{}, fmt.Errorf("load generator: %w", err)
	}
	return u, nil
}

// Main is a load generator's main: it reads its spec from stdin, has
// generate make the load it names, and talks to the parent as genMsg
// values on stdout.
func Main(stdin io.Reader, stdout io.Writer, generate func(ctx context.Context, spec Spec, p *Parent) error) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	p := &Parent{in: stdin, enc: json.NewEncoder(stdout)}
	if err := serve(ctx, p, generate); err != nil {
		p.enc.Encode(genMsg{Error: err.Error()})
		return 1
	}
	return 0
}

// serve reads the spec, then has generate make its load.
func serve(ctx context.Context, p *Parent, generate func(ctx context.Context, spec Spec, p *Parent) error) error {
	var spec Spec
	if err := json.NewDecoder(p.in).Decode(&spec); err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	return generate(ctx, spec, p)
}

// Parent is the parent, seen from a load generator.
type Parent struct {
	in    io.Reader
	enc   *json.Encoder
	cpuGo time.Duration // our CPU time when told to go
}

// Ready says setup is done and returns once the parent, having read its
// counters, says go by closing our stdin.
func (p *Parent) Ready() error {
	if err := p.enc.Encode(genMsg{Ready: true}); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, p.in); err != nil {
		return err
	}
	var err error
	p.cpuGo, err = measure.ProcessCPU()
	return err
}

// Report sends v, the generator's report, with the CPU time the
// generator spent since Ready returned.
func (p *Parent) Report(v any) error {
	cpu, err := measure.ProcessCPU()
	if err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return p.enc.Encode(genMsg{Report: b, CPU: cpu - p.cpuGo})
}
