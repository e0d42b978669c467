package dev.baton.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Keeper is what every hold a Client keeps alive shares, whatever its kind:
 * the background renewal, the deadline by the client's own clock,
 * registration with the Client's event stream, and how the hold ends (lost
 * or given back). keys are the holds whose end, as events record it, ends
 * this one: its own key, or a lock set's locks.
 *
 * <p>The client judges the lease by its own monotonic clock, erring on the
 * side of "lost": a lease of TTL d whose latest successful renew (or the
 * grant) was sent at t is taken to end at t+d, although the server granted
 * it a little later. The hold is lost then unless a renew succeeded.
 */
final class Keeper {
    static final String LOCK = "lock";
    static final String ELECTION = "election";
    static final String SEMAPHORE = "semaphore";
    static final String RWLOCK = "rwlock";
    /** A lock set's holds are its locks (kind lock): this kind names the set as a whole, in errors, and is no event's. */
    static final String LOCKSET = "lockset";

    /** etcd's lease floor and the server's minimum TTL: it stands in for a TTL the server failed to report. */
    private static final long MIN_TTL = Duration.ofSeconds(2).toNanos();
    /** The requests to yield a hold keeps until onYield is set; more are dropped: a holder with requests unread knows it is asked. */
    private static final int YIELD_BUFFER = 16;

    /** A hold as its events name it. */
    record Key(String kind, String name, long token) {}

    /** The calls by which one kind of hold is kept, by its token. */
    interface Ops {
        /** Renews, the attempt bounded by timeout; records what the answer says; returns the TTL it reports (null: none). */
        Duration renew(Duration timeout);

        /** Gives the hold back. */
        void release();
    }

    /**
     * What the answer that granted a hold says about its lease: status 201
     * granted now, 200 the session held it already; sent is when the request
     * left (System.nanoTime); left is expires_at - acquired_at by the
     * server's clock (null: unknown).
     */
    record Grant(int status, long sent, Duration ttl, Duration left, boolean inSession) {}

    final Client c;
    final Key key;
    final List<Key> keys;
    private final Ops ops;
    private final CompletableFuture<LockLostException> lost = new CompletableFuture<>();
    private final Object mu = new Object();
    private final Object releaseMu = new Object();
    private long ttl;
    private long deadline;
    private ScheduledFuture<?> renewTimer;
    private ScheduledFuture<?> expiryTimer;
    private RuntimeException lastErr;
    private volatile LockLostException err;
    private boolean finished;
    private boolean stopped;
    private boolean renewing;
    private int failures;
    private boolean released;
    // Requests to yield: the callback onYield set, and those heard before it was. Under mu.
    private Consumer<Event> yieldCallback;
    private final List<Event> heardYields = new ArrayList<>();

    Keeper(Client c, Key key, List<Key> keys, Ops ops) {
        this.c = c;
        this.key = key;
        this.keys = keys == null || keys.isEmpty() ? List.of(key) : List.copyOf(keys);
        this.ops = ops;
    }

    CompletableFuture<LockLostException> lost() {
        return lost;
    }

    LockLostException lostError() {
        return err;
    }

    static boolean isLostAnswer(Throwable e) {
        return e instanceof NotHeldException || e instanceof NoLeaderException || e instanceof TokenMismatchException
                || e instanceof SessionNotFoundException;
    }

    /**
     * start keeps the hold alive from its grant on: it works out the lease's
     * deadline, renews at once when the first renew is due already, then
     * starts the renewal, the expiry timer and the watch. On a throw nothing
     * runs, and a hold with a lease of its own whose deadline is unknown has
     * been given back.
     */
    void start(String op, Grant g) {
        long t = g.ttl() != null && g.ttl().toNanos() > 0 ? g.ttl().toNanos() : MIN_TTL;
        long d = 0; // 0: unknown
        if (!g.inSession()) {
            // The hold's own lease was granted with ttl after we sent the
            // request, so it runs out no sooner than sent+ttl.
            d = g.sent() + t;
        } else if (g.status() == 201) {
            // The session's lease is older than this request; the server
            // measured what was left of it when the hold began.
            d = g.sent() + (g.left() != null && g.left().toNanos() > 0 ? Math.min(t, g.left().toNanos()) : t);
        } // 200: the session held it already; nothing says how much is left.
        if (d == 0 || d - System.nanoTime() < 2 * t / 3) {
            // The first renew is due already (a long wait, a session lease
            // that ran down): renew before handing the hold over.
            long rsent = System.nanoTime();
            try {
                Duration r = ops.renew(c.timeout());
                if (r != null && r.toNanos() > 0) {
                    t = r.toNanos();
                }
                d = rsent + t;
            } catch (BatonException e) {
                if (isLostAnswer(e)) {
                    throw new LockLostException(key.kind(), key.name(), key.token(),
                            op + ": granted, then lost before its first renew: " + e.getMessage(), e, null);
                }
                if (d == 0 || d <= System.nanoTime()) {
                    if (!g.inSession()) {
                        try {
                            ops.release();
                        } catch (RuntimeException ignored) {
                            // It expires after its TTL.
                        }
                    }
                    throw e;
                }
                // Still ours for a while: the background renewal keeps trying.
            }
        }
        synchronized (mu) {
            ttl = t;
            deadline = d;
            scheduleExpiryLocked();
            scheduleRenewLocked();
        }
        c.watcher().register(this);
    }

    private void scheduleRenewLocked() {
        if (stopped) {
            return;
        }
        long wait = deadline - 2 * ttl / 3 - System.nanoTime();
        if (failures > 0) {
            wait = Math.min(TimeUnit.MILLISECONDS.toNanos(c.backoffMillis(failures - 1)), ttl / 6);
        }
        try {
            renewTimer = c.scheduler().schedule(() -> c.workers().execute(this::renewOnce), Math.max(wait, 0), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closed) {
            // The client is closed: nothing renews the hold any more, as Client.close says.
        }
    }

    private void scheduleExpiryLocked() {
        if (expiryTimer != null) {
            expiryTimer.cancel(false);
        }
        try {
            expiryTimer = c.scheduler().schedule(this::checkExpiry, Math.max(deadline - System.nanoTime(), 0), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException closed) {
            expiryTimer = null; // the client is closed
        }
    }

    /** renewOnce is one background renew, then the next one's timer. */
    private void renewOnce() {
        long sent = System.nanoTime();
        long timeout;
        synchronized (mu) {
            if (stopped) {
                return;
            }
            // A renew that answers after the deadline is of no use: the hold
            // is lost by then. Each attempt gets a third of the TTL, so a
            // hung node leaves time to try another.
            timeout = Math.min(Math.min(c.timeout().toNanos(), Math.max(ttl / 3, TimeUnit.MILLISECONDS.toNanos(100))),
                    deadline - sent);
            if (timeout <= 0) {
                return; // the expiry timer decides
            }
            renewing = true;
        }
        Duration r = null;
        RuntimeException e = null;
        try {
            r = ops.renew(Duration.ofNanos(timeout));
        } catch (RuntimeException x) {
            e = x;
        }
        boolean lose = false;
        synchronized (mu) {
            renewing = false;
            mu.notifyAll();
            if (stopped) {
                return;
            }
            if (e == null) {
                failures = 0;
                extendLocked(sent, r);
            } else if (isLostAnswer(e)) {
                lose = true;
            } else {
                failures++;
                lastErr = e;
            }
            if (!lose) {
                scheduleRenewLocked();
            }
        }
        if (lose) {
            lose("renew answered: " + e.getMessage(), e, null);
        }
    }

    /**
     * renewNow renews at once, besides the background renewal, and moves the
     * deadline on. It throws the LockLostException when the hold was lost
     * before or the renew finds it lost; another error leaves the hold as it
     * was.
     */
    void renewNow() {
        LockLostException l = err;
        if (l != null) {
            throw l;
        }
        long sent = System.nanoTime();
        Duration r;
        try {
            r = ops.renew(c.timeout());
        } catch (BatonException e) {
            if (isLostAnswer(e)) {
                lose("renew answered: " + e.getMessage(), e, null);
                if (err != null) {
                    throw err;
                }
            }
            throw e;
        }
        synchronized (mu) {
            extendLocked(sent, r);
        }
    }

    private void extendLocked(long sent, Duration r) {
        if (finished) {
            return;
        }
        if (r != null && r.toNanos() > 0) {
            ttl = r.toNanos();
        }
        long d = sent + ttl;
        if (d > deadline) {
            deadline = d;
            scheduleExpiryLocked();
        }
        lastErr = null;
    }

    private void checkExpiry() {
        String why;
        RuntimeException last;
        synchronized (mu) {
            if (finished) {
                return;
            }
            long left = deadline - System.nanoTime();
            if (left > 0) {
                scheduleExpiryLocked();
                return;
            }
            why = "its " + Duration.ofNanos(ttl).toMillis() + " ms lease ran out by this client's clock with no renew confirmed";
            last = lastErr;
            if (last != null) {
                why += "; last renew: " + last.getMessage();
            }
        }
        lose(why, last, null);
    }

    /** onYield sets callback for the requests to yield made of this hold, and passes it those heard before. */
    void onYield(Consumer<Event> callback) {
        List<Event> heard;
        synchronized (mu) {
            yieldCallback = callback;
            heard = new ArrayList<>(heardYields);
            heardYields.clear();
        }
        for (Event ev : heard) {
            deliverYield(callback, ev);
        }
    }

    /** askedToYield passes ev, a yield_requested event of this hold's, to the callback, or keeps it for the callback to come. */
    void askedToYield(Event ev) {
        Consumer<Event> callback;
        synchronized (mu) {
            if (finished) {
                return;
            }
            callback = yieldCallback;
            if (callback == null) {
                if (heardYields.size() < YIELD_BUFFER) {
                    heardYields.add(ev);
                }
                return;
            }
        }
        deliverYield(callback, ev);
    }

    /** deliverYield runs callback on the client's threads: a slow one must not stall the event stream. */
    private void deliverYield(Consumer<Event> callback, Event ev) {
        try {
            c.workers().execute(() -> callback.accept(ev));
        } catch (RejectedExecutionException closed) {
            // The client is closed: nobody is listening any more.
        }
    }

    /** lose ends the hold as lost, once. */
    void lose(String why, Throwable cause, Event event) {
        LockLostException e;
        synchronized (mu) {
            if (err != null || finished) {
                return;
            }
            e = new LockLostException(key.kind(), key.name(), key.token(), why, cause, event);
            err = e;
            finishLocked();
        }
        c.watcher().unregister(this);
        // Not on this thread: a caller's dependent stage must not stall the
        // event stream or the renewal that learned of the loss.
        try {
            c.workers().execute(() -> lost.complete(e));
        } catch (RejectedExecutionException closed) {
            lost.complete(e); // the client is closed: nothing left to stall
        }
    }

    private void finishLocked() {
        finished = true;
        stopped = true;
        if (renewTimer != null) {
            renewTimer.cancel(false);
        }
        if (expiryTimer != null) {
            expiryTimer.cancel(false);
        }
    }

    /** stopRenewal stops the renewal and waits for a renew under way; under releaseMu. */
    private void stopRenewal() {
        synchronized (mu) {
            stopped = true;
            if (renewTimer != null) {
                renewTimer.cancel(false);
            }
            boolean interrupted = false;
            while (renewing) {
                try {
                    mu.wait();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * handOn ends the hold by call, a request that hands it to another (a
     * leadership's transfer), as release ends it by its release, and returns
     * what call does: the renewal and the watch stop first, so its own end
     * is no loss. A refusal that says the hold goes on
     * (CandidateNotWaitingException, ElectionHeldException), or no answer,
     * resumes them and is thrown: if the hold did change hands unseen, the
     * next renew finds it lost. It throws the LockLostException when the
     * hold was lost before.
     */
    <T> T handOn(java.util.function.Supplier<T> call) {
        synchronized (releaseMu) {
            if (released) {
                LockLostException l = err;
                throw l != null ? l : new LockLostException(key.kind(), key.name(), key.token(), "given up already", null, null);
            }
            stopRenewal();
            c.watcher().unregister(this);
            T result;
            try {
                result = call.get();
            } catch (RuntimeException e) {
                boolean lostAnswer = isLostAnswer(e);
                if (lostAnswer) {
                    lose("answered: " + e.getMessage(), e, null);
                }
                boolean over;
                synchronized (mu) {
                    over = finished;
                    if (!over) {
                        stopped = false;
                        failures = 0;
                        scheduleRenewLocked();
                    }
                }
                if (over) {
                    released = true;
                    LockLostException l = err;
                    throw l != null ? l : e;
                }
                c.watcher().register(this);
                throw e;
            }
            released = true;
            synchronized (mu) {
                finishLocked();
            }
            LockLostException l = err;
            if (l != null) {
                throw l;
            }
            return result;
        }
    }

    /**
     * release stops the renewal and gives the hold back with its token. It
     * returns when it did, and throws the LockLostException when the hold
     * was lost before. Calling it again gives the same result without a
     * second request. When it gets no answer (UnavailableException), another
     * call tries again.
     */
    void release() {
        synchronized (releaseMu) {
            if (released) {
                if (err != null) {
                    throw err;
                }
                return;
            }
            // Renewal stops first: a renew racing the release could only
            // make a lost hold look held for a moment, or a released one lost.
            stopRenewal();
            // Before the release: its own end's event is no loss.
            c.watcher().unregister(this);
            // Even a hold the client judged lost is given back: its clock
            // errs early, so the server may still have it, and others should
            // not wait for the lease to run out.
            try {
                ops.release();
            } catch (BatonException e) {
                if (!isLostAnswer(e)) {
                    // No answer: another call may try again. A hold already
                    // lost says so first.
                    LockLostException l = err;
                    throw l != null ? l : e;
                }
                lose("release answered: " + e.getMessage(), e, null);
            }
            released = true;
            synchronized (mu) {
                finishLocked();
            }
            LockLostException l = err;
            if (l != null) {
                throw l;
            }
        }
    }

    boolean released() {
        synchronized (releaseMu) {
            return released;
        }
    }
}
