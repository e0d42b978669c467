package dev.baton.client;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * InLine runs an acquire (a lock's, a campaign, a permit's, a read/write
 * hold's) that waits up to a total which may be longer than one request
 * carries ({@link Client#maxRequestWait()}). A total that fits one request
 * is one request. A longer one needs a session, which InLine renews while
 * it waits: it is a run of requests, each with a wait of at most the
 * maximum and keep_place while more than that remains, so that one that
 * runs out (409 with place_kept) leaves the session's place in line and
 * the next waits from there, on whichever node it reaches. It ends at the
 * first answer that is not a kept place. If the thread is interrupted
 * during the run, a last request without keep_place gives the place up,
 * and undo ends what that one may have been granted.
 */
final class InLine {
    private static final Duration GIVE_UP_WAIT = Duration.ofMillis(1);

    private InLine() {}

    /** One request of the run: it waits up to wait and, with keep, keeps the session's place when that runs out. */
    interface Request {
        Client.Req make(Duration wait, boolean keep);
    }

    /** The answer that ended the run, and when its request left (System.nanoTime). */
    record Granted(Client.Resp resp, long sent) {}

    static Granted run(Client c, String op, String session, Duration total, Request req, Consumer<Client.Resp> undo) {
        Duration max = c.maxRequestWait();
        if (total == null || total.compareTo(max) <= 0) {
            long sent = System.nanoTime();
            return new Granted(c.call(req.make(total, false)), sent);
        }
        if (session == null || session.isEmpty()) {
            throw new InvalidRequestException(new Problem(0, ProblemCode.INVALID_REQUEST.code(), "Invalid request", "a wait over "
                    + Durations.wire(max) + " (the client's maxRequestWait) needs a session, which keeps the place in line between requests",
                    Map.of("field", "wait"), null, op, null));
        }
        long totalNanos;
        try {
            totalNanos = total.toNanos();
        } catch (ArithmeticException e) {
            totalNanos = Long.MAX_VALUE;
        }
        boolean forever = totalNanos == Long.MAX_VALUE;
        long deadline = System.nanoTime() + totalNanos; // only differences are read: an overflow is harmless
        SessionKeeper keeper = SessionKeeper.start(c, session);
        try {
            for (;;) {
                Duration wait = max;
                boolean keep = true;
                long left = deadline - System.nanoTime();
                if (!forever && left <= max.toNanos()) {
                    wait = Duration.ofNanos(Math.max(left, GIVE_UP_WAIT.toNanos()));
                    keep = false;
                }
                long sent = System.nanoTime();
                try {
                    return new Granted(c.call(req.make(wait, keep)), sent);
                } catch (BatonException e) {
                    if (!keep || !e.placeKept()) {
                        throw e;
                    }
                    if (Thread.currentThread().isInterrupted()) {
                        giveUp(c, req, undo);
                        throw new CancellationException(op + ": interrupted");
                    }
                } catch (CancellationException e) {
                    // Interrupted during a request: the place may be kept
                    // (the server may not have seen the cancellation).
                    if (keep) {
                        giveUp(c, req, undo);
                    }
                    throw e;
                }
            }
        } finally {
            keeper.stop();
        }
    }

    /**
     * giveUp sends one last request without keep_place and with a tiny
     * wait, which ends the session's place; if the place was granted
     * meanwhile, it answers with the hold, which undo ends. Best effort:
     * at worst the place ends with the session. The interrupt flag is
     * cleared for it and set again.
     */
    private static void giveUp(Client c, Request req, Consumer<Client.Resp> undo) {
        boolean interrupted = Thread.interrupted();
        try {
            Client.Resp r = c.call(req.make(GIVE_UP_WAIT, false));
            undo.accept(r);
        } catch (RuntimeException e) {
            // Held, as expected (the place is given up), or no answer.
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * SessionKeeper renews a session at a third of its TTL (at least a
     * second apart) until stopped. A renewal that fails is tried again at the
     * next turn; a session that is gone stops it (the wait then ends by
     * itself: the server answers session_not_found).
     */
    static final class SessionKeeper {
        private final Client c;
        private final String id;
        private boolean stopped; // guarded by this
        private ScheduledFuture<?> next; // guarded by this

        private SessionKeeper(Client c, String id) {
            this.c = c;
            this.id = id;
        }

        static SessionKeeper start(Client c, String id) {
            SessionKeeper k = new SessionKeeper(c, id);
            try {
                c.workers().execute(k::turn);
            } catch (RejectedExecutionException e) {
                // The client is closed: its calls fail by themselves.
            }
            return k;
        }

        private void turn() {
            synchronized (this) {
                if (stopped) {
                    return;
                }
            }
            long every = 1000;
            try {
                SessionInfo s = c.renewSession(id);
                if (s.ttl() != null) {
                    every = Math.max(s.ttl().toMillis() / 3, 1000);
                }
            } catch (SessionNotFoundException e) {
                return;
            } catch (RuntimeException e) {
                // Tried again at the next turn.
            }
            synchronized (this) {
                if (stopped) {
                    return;
                }
                try {
                    next = c.scheduler().schedule(() -> c.workers().execute(this::turn), every, TimeUnit.MILLISECONDS);
                } catch (RejectedExecutionException e) {
                    // The client is closed.
                }
            }
        }

        synchronized void stop() {
            stopped = true;
            if (next != null) {
                next.cancel(false);
            }
        }
    }
}
