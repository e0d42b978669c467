package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/baton-dev/baton/client"
)

// forwarded are the signals "baton exec" passes on to its command.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

func notifyContext(parent context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
}

func execCmd(g *globals) *cobra.Command {
	var o client.AcquireOptions
	var st stopping
	var onYield string
	var bind bool
	var permits int
	var read, write bool
	c := &cobra.Command{
		Use:   "exec [flags] NAME [NAME...] -- CMD [ARGS...]",
		Short: "Run a command only while holding a lock (several at once, a semaphore's permit, a read/write lock's hold)",
		Long: `exec takes NAME, runs CMD while it holds it (renewing the lock in the
background), and releases it when CMD exits, exiting with CMD's exit code.
CMD gets BATON_LOCK (the name) and BATON_TOKEN (the fencing token) in its
environment: pass the token to whatever the lock protects.

Signals sent to exec (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2)
are forwarded to CMD. If the lock is lost while CMD runs (revoked, expired,
released elsewhere, renewal refused, or baton unreachable for longer than
the TTL), exec sends CMD SIGTERM, then SIGKILL after --kill-after, and
exits with code 10. A revoke or an expiry is known within a second, from
baton's event stream, whatever the TTL.
If the lock is held and --wait runs out, exec exits with code 3 without
running CMD.

With --on-yield SIGNAL (INT, TERM, HUP, QUIT, USR1 or USR2), a request
that the hold yield ("baton yield NAME", by a waiter or an operator)
sends CMD that signal, within milliseconds; CMD decides whether to finish
early. Its exit releases the hold as ever. Without it, requests are not
watched for.

With several NAMEs, exec takes them as one lock set: all of them at once,
with one fencing token, or none. CMD gets BATON_LOCKS (the names,
separated by commas) and BATON_TOKEN (the set's token, every lock's) in
its environment, and the set is released when CMD exits. With --wait the
set queues for every lock at once, first come first served with single
locks and other sets, so two sets never deadlock whatever order they name
their locks in. If any lock of the set is lost while CMD runs (a revoke
of one lock ends the set too), exec stops CMD as for a lock and exits
with code 10; when a lock is held and --wait runs out, exec exits with
code 3, naming every lock in the way, and takes none. --permits, --read,
--write and --lock-delay take one NAME.

With --permits N, NAME is a semaphore of N permits, and CMD runs holding
one of them: at most N commands run at once across the cluster. CMD gets
BATON_SEMAPHORE (the name), BATON_TOKEN (the permit's own fencing token)
and BATON_LIMIT (N) in its environment, the permit is given back when CMD
exits, and signals, a lost permit (exit code 10) and --wait work as for a
lock. When every permit is held and --wait runs out, exec exits with code
3, naming the holders; when the semaphore's permits are held under another
N, with code 2, naming it. --lock-delay does not apply to a semaphore.

With --read or --write, NAME is a read/write lock, and CMD runs under a
read hold (shared with other readers) or the write hold (alone): a
catalogue rebuilt rarely and read constantly. Waiting is first come,
first served: a reader that comes while a writer waits queues behind it.
CMD gets BATON_RWLOCK (the name), BATON_TOKEN (the hold's own fencing
token) and BATON_MODE (read or write) in its environment, the hold ends
when CMD exits, and signals, a lost hold (exit code 10) and --wait work as
for a lock. When holds are in the way and --wait runs out, exec exits
with code 3, naming them. --read and --write exclude each other,
--permits and --lock-delay.

With --at-least D, what exec takes stays taken until D after it was
granted, however soon CMD exits (the hold's min_hold): the recipe for a
job that cron starts on every host, to run once per window. The first
host to fire runs CMD; a host whose cron fires seconds later, even after
CMD finished, finds the lock taken and exits with code 3 without running
CMD. D is at most 24h.

With --bind, exec takes the lock in a session tied to its own stream to
baton, as a ZooKeeper client's session is to its connection: if exec dies
(kill -9, a crash, a lost network), the lock ends --grace later (2s by
default, 500ms to 1m), not a TTL later, and the next waiter gets it then.
exec keeps the stream open, on another node if one fails, and deletes the
session when CMD exits. Not for a lock set (several NAMEs).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash < 1 || len(args) <= dash {
				return usagef("usage: baton exec [flags] NAME [NAME...] -- CMD [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			names, argv := args[:cmd.ArgsLenAtDash()], args[cmd.ArgsLenAtDash():]
			var err error
			if st.onYield, err = yieldSignal(onYield); err != nil {
				return err
			}
			if st, err = bindOf(st, bind, cmd); err != nil {
				return err
			}
			if len(names) > 1 && bind {
				return usagef("--bind takes one NAME")
			}
			if len(names) > 1 {
				if err := setFlags(cmd, read, write, o.LockDelay); err != nil {
					return err
				}
				cl, err := g.client()
				if err != nil {
					return err
				}
				so := client.LockSetOptions{Owner: o.Owner, TTL: o.TTL, Wait: o.Wait, MinHold: o.MinHold}
				return runSetExec(cmd.Context(), g, cl, names, argv, so, st)
			}
			if permits < 0 || permits == 0 && cmd.Flags().Changed("permits") {
				return usagef("--permits must be at least 1")
			}
			if permits > 0 && o.LockDelay != 0 {
				return usagef("--lock-delay does not apply to a semaphore (--permits)")
			}
			mode, err := rwMode(read, write, permits, o.LockDelay)
			if err != nil {
				return err
			}
			cl, err := g.client()
			if err != nil {
				return err
			}
			if mode != "" {
				ro := client.RWOptions{Owner: o.Owner, TTL: o.TTL, Wait: o.Wait, MinHold: o.MinHold}
				return runRWExec(cmd.Context(), g, cl, names[0], mode, argv, ro, st)
			}
			if permits > 0 {
				po := client.PermitOptions{Owner: o.Owner, TTL: o.TTL, Wait: o.Wait, MinHold: o.MinHold}
				return runPermitExec(cmd.Context(), g, cl, names[0], permits, argv, po, st)
			}
			return runExec(cmd.Context(), g, cl, names[0], argv, o, st)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Owner, "owner", defaultOwner(), "owner label for people and the audit trail")
	f.DurationVar(&o.TTL, "ttl", 30*time.Second, "lock TTL; the lock is renewed at about a third of it")
	f.DurationVar(&o.Wait, "wait", 0, "queue for the lock this long if it is held (default: fail at once)")
	f.DurationVar(&o.LockDelay, "lock-delay", 0, "forbid re-acquiring for this long after an expiry or revoke")
	f.DurationVar(&o.MinHold, "at-least", 0, "keep the lock taken until this long after the grant, however soon CMD exits: run once per window")
	f.DurationVar(&st.killAfter, "kill-after", 10*time.Second, "after the lock is lost, wait this long after SIGTERM before SIGKILL")
	f.StringVar(&onYield, "on-yield", "", "when the hold is asked to yield (baton yield), send CMD this signal: INT, TERM, HUP, QUIT, USR1 or USR2")
	bindFlags(f, &st, &bind)
	f.IntVar(&permits, "permits", 0, "NAME is a semaphore of this many permits: run holding one of them")
	f.BoolVar(&read, "read", false, "NAME is a read/write lock: run under a read hold, shared with other readers")
	f.BoolVar(&write, "write", false, "NAME is a read/write lock: run under its write hold, alone")
	return c
}

func runExec(ctx context.Context, g *globals, cl *client.Client, name string, argv []string, o client.AcquireOptions, st stopping) error {
	r := startHeldRun(g, "baton exec", argv, st)
	defer r.stop()
	l, end, err := take(ctx, r, &sessionWait{cl, o.Wait, o.Owner, &o.Session, &o.TTL},
		func(ctx context.Context) (*client.Lock, error) { return cl.Acquire(ctx, name, o) }, heldDetail)
	if err != nil {
		return err
	}
	defer end()
	env := []string{"BATON_LOCK=" + name, "BATON_TOKEN=" + strconv.FormatInt(l.Token(), 10)}
	return r.run(l, "release "+name, l.Release, env)
}

// kept is a hold a command runs under: a *client.Lock, a
// *client.LockSet, a *client.Leadership, a *client.Permit or a
// *client.RWHold.
type kept interface {
	Token() int64
	Lost() <-chan struct{}
	Err() error
	YieldRequested() <-chan client.YieldRequest
}

// heldRun runs a command under a hold, as "baton exec" (a lock's, a
// permit's or a read/write lock's) and "baton elect" do: signals are forwarded to it, it is stopped (SIGTERM, then SIGKILL
// after killAfter) when the hold is lost, and the hold ends when it exits.
type heldRun struct {
	g    *globals
	who  string // prefixes the messages: "baton exec"
	argv []string
	stopping
	sigs chan os.Signal
}

// stopping is how a command run under a hold is asked to stop: after the
// hold is lost, SIGTERM and then SIGKILL after killAfter; when the hold is
// asked to yield, onYield (nil: nothing), which the command may heed by
// exiting, and so ending the hold, or ignore.
type stopping struct {
	killAfter time.Duration
	onYield   os.Signal
	// bound, when set, is the grace of a stream-bound session the hold is
	// taken in (--bind): if this process dies, the hold ends that long
	// after, not a TTL after.
	bound time.Duration
}

// bindFlags adds --bind and --grace, which set st.bound.
func bindFlags(f *pflag.FlagSet, st *stopping, bind *bool) {
	f.BoolVar(bind, "bind", false, "take the hold in a session tied to this process's stream: if the process dies, it ends after --grace, not the TTL")
	f.DurationVar(&st.bound, "grace", client.DefaultStreamGrace, "with --bind: how long the hold outlives this process's stream (500ms to 1m)")
}

// bindOf is st with bound cleared unless --bind was given.
func bindOf(st stopping, bind bool, cmd *cobra.Command) (stopping, error) {
	if !bind {
		if cmd.Flags().Changed("grace") {
			return st, usagef("--grace needs --bind")
		}
		st.bound = 0
	}
	return st, nil
}

// signalNames are the forwarded signals by name, without SIG.
var signalNames = map[string]os.Signal{
	"INT": syscall.SIGINT, "TERM": syscall.SIGTERM, "HUP": syscall.SIGHUP, "QUIT": syscall.SIGQUIT, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2,
}

// signalName is s's name in signalNames.
func signalName(s os.Signal) string {
	for name, sig := range signalNames {
		if sig == s {
			return name
		}
	}
	return s.String()
}

// yieldSignal reads --on-yield: a forwarded signal's name, with or
// without SIG, in any case; empty is none.
func yieldSignal(name string) (os.Signal, error) {
	if name == "" {
		return nil, nil
	}
	if s, ok := signalNames[strings.TrimPrefix(strings.ToUpper(name), "SIG")]; ok {
		return s, nil
	}
	return nil, usagef("--on-yield %q: want INT, TERM, HUP, QUIT, USR1 or USR2", name)
}

// startHeldRun begins catching the forwarded signals: those that arrive
// while the hold is sought end the wait (untilSignal); once the command
// runs they are the command's. stop ends that.
func startHeldRun(g *globals, who string, argv []string, st stopping) *heldRun {
	r := &heldRun{g: g, who: who, argv: argv, stopping: st, sigs: make(chan os.Signal, 8)}
	signal.Notify(r.sigs, forwarded...)
	return r
}

func (r *heldRun) stop() { signal.Stop(r.sigs) }

// untilSignal is ctx, ended also by a forwarded signal: for the wait for
// the hold.
func (r *heldRun) untilSignal(ctx context.Context) (context.Context, context.CancelFunc) {
	actx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-r.sigs:
			cancel()
		case <-actx.Done():
		}
	}()
	return actx, cancel
}

// run runs the command with env added to ours while h lasts, and then
// ends h with end (what names that in its message). It returns the
// command's exit, or an ExitLost error when h was lost while it ran.
func (r *heldRun) run(h kept, what string, end func(context.Context) error, env []string) error {
	defer func() {
		rctx, done := context.WithTimeout(context.Background(), 10*time.Second)
		defer done()
		if err := end(rctx); err != nil && !errors.Is(err, client.ErrLockLost) {
			fmt.Fprintf(r.g.stderr, "%s: %s: %v\n", r.who, what, err)
		}
	}()
	child := exec.Command(r.argv[0], r.argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, r.g.stdout, r.g.stderr
	child.Env = append(os.Environ(), env...)
	if err := child.Start(); err != nil {
		return &ExitError{Code: 127, Err: fmt.Errorf("start %s: %w", r.argv[0], err)}
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	lost := h.Lost()
	var yields <-chan client.YieldRequest
	if r.onYield != nil {
		yields = h.YieldRequested()
	}
	var kill <-chan time.Time
	lostErr := error(nil)
	for {
		select {
		case s := <-r.sigs:
			_ = child.Process.Signal(s)
		case y, ok := <-yields:
			if !ok {
				yields = nil // the hold ended: lost, which the next case tells
				continue
			}
			fmt.Fprintf(r.g.stderr, "%s: %s; sending %s SIG%s\n", r.who, yieldCause(y), r.argv[0], signalName(r.onYield))
			_ = child.Process.Signal(r.onYield)
		case <-lost:
			lost = nil
			lostErr = h.Err()
			fmt.Fprintf(r.g.stderr, "%s: %s; sending %s SIGTERM (SIGKILL after %s)\n", r.who, lostCause(lostErr), r.argv[0], r.killAfter)
			_ = child.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(r.killAfter)
			defer t.Stop()
			kill = t.C
		case <-kill:
			fmt.Fprintf(r.g.stderr, "%s: %s still running %s after SIGTERM; killing it\n", r.who, r.argv[0], r.killAfter)
			_ = child.Process.Kill()
			kill = nil
		case err := <-exited:
			if lostErr != nil {
				return &ExitError{Code: ExitLost, Err: &friendly{msg: fmt.Sprintf("%s stopped: %s", r.argv[0], lostCause(lostErr)), err: lostErr}}
			}
			return childExit(err)
		}
	}
}

// yieldCause says who asked which hold to yield, and why.
func yieldCause(y client.YieldRequest) string {
	s := fmt.Sprintf("%s asks %s %q (token %d) to yield", y.Owner, y.Kind, y.Name, y.Token)
	if y.Reason != "" {
		s += ": " + y.Reason
	}
	return s
}

// lostCause says, once, which hold was lost and how that became known.
func lostCause(err error) string {
	var le *client.LostError
	if errors.As(err, &le) {
		switch le.Kind {
		case "election":
			return fmt.Sprintf("leadership of %q (token %d) lost: %v", le.Name, le.Token, le.Cause)
		case "semaphore":
			return fmt.Sprintf("permit of %q (token %d) lost: %v", le.Name, le.Token, le.Cause)
		case "rwlock":
			return fmt.Sprintf("hold of rwlock %q (token %d) lost: %v", le.Name, le.Token, le.Cause)
		case "lockset":
			return fmt.Sprintf("lock set %q (token %d) lost: %v", le.Name, le.Token, le.Cause)
		}
		return fmt.Sprintf("lock %q (token %d) lost: %v", le.Name, le.Token, le.Cause)
	}
	return err.Error()
}

// childExit turns CMD's end into exec's: its exit code, or 128+signal.
func childExit(err error) error {
	if err == nil {
		return nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &ExitError{Code: 128 + int(ws.Signal()), Err: fmt.Errorf("command killed by %s", ws.Signal()), Quiet: true}
		}
		return &ExitError{Code: ee.ExitCode(), Err: fmt.Errorf("command exited with %d", ee.ExitCode()), Quiet: true}
	}
	return err
}

// longWait prepares a wait longer than one request carries
// (client.MaxRequestWait): the client keeps its place in line across
// requests with a session, so without one a session is made for the
// hold, with the hold's TTL (session and ttl are set to it and 0), and
// ended once the command is done (end).
func longWait(ctx context.Context, cl *client.Client, wait time.Duration, owner string, session *string, ttl *time.Duration) (end func(), err error) {
	if wait <= client.MaxRequestWait || *session != "" {
		return func() {}, nil
	}
	s, err := cl.CreateSession(ctx, owner, *ttl)
	if err != nil {
		return nil, err
	}
	*session, *ttl = s.ID, 0
	return func() {
		ectx, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer done()
		// The hold ended first, released in the session: the session's
		// end takes nothing with it but a place in line, if the wait
		// was given up.
		_ = cl.DeleteSession(ectx, s.ID)
	}, nil
}

// bindSession gives the hold a session bound to this process's stream,
// with grace (--bind): sw's session and ttl are set to it and 0. Its
// stream is held while the command runs, and end deletes it, which
// releases the hold at once. A long wait waits at its place in line.
func bindSession(ctx context.Context, sw *sessionWait, grace time.Duration) (end func(), err error) {
	if *sw.session != "" {
		return nil, usagef("--bind makes a session of its own: it takes no --session")
	}
	ss, err := sw.cl.OpenStreamSession(ctx, sw.owner, grace)
	if err != nil {
		return nil, err
	}
	*sw.session, *sw.ttl = ss.ID(), 0
	return func() {
		ectx, done := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer done()
		_ = ss.Close(ectx)
	}, nil
}

// sessionWait is what longWait needs of a hold's options: nil for a hold
// that never waits longer than one request (a lock set's).
type sessionWait struct {
	cl      *client.Client
	wait    time.Duration
	owner   string
	session *string
	ttl     *time.Duration
}

// take acquires the hold r runs under: acquire is called with a context
// that a forwarded signal ends, after a long wait (sw) has been given a
// session of its own; detail rewrites its refusal. end ends that session,
// once the command is done.
func take[H kept](ctx context.Context, r *heldRun, sw *sessionWait, acquire func(context.Context) (H, error), detail func(error) error) (h H, end func(), err error) {
	actx, cancel := r.untilSignal(ctx)
	defer cancel()
	end = func() {}
	switch {
	case sw != nil && r.bound > 0:
		if end, err = bindSession(actx, sw, r.bound); err != nil {
			return h, nil, err
		}
	case sw != nil:
		if end, err = longWait(actx, sw.cl, sw.wait, sw.owner, sw.session, sw.ttl); err != nil {
			return h, nil, err
		}
	}
	if h, err = acquire(actx); err != nil {
		end()
		return h, nil, detail(err)
	}
	return h, end, nil
}
