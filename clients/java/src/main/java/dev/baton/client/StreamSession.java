package dev.baton.client;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A session bound to a stream, as ZooKeeper's is to its connection
 * ({@link Client#openStreamSession}): it lives while this client holds its
 * stream open, on any node, and ends, with every hold in it, once no
 * stream of it has been open for its grace. So the holds of a process that
 * dies, or loses the network, go to the next waiter about a grace later,
 * not a TTL later. Acquire in it with its {@link #id()} as the session.
 *
 * <p>The client reopens the stream at once, on the next endpoint, when it
 * breaks or goes silent for half the grace (the server sends heartbeats at
 * least four times a grace); the session ends only when that fails for
 * the whole grace. {@link #close()} deletes the session, so it fits
 * try-with-resources. Thread-safe.
 */
public final class StreamSession implements AutoCloseable {
    /** The server's default grace of a stream-bound session. */
    public static final Duration DEFAULT_GRACE = Duration.ofSeconds(2);
    /** The least grace a stream-bound session may have. */
    public static final Duration MIN_GRACE = Duration.ofMillis(500);

    private final Client c;
    private final SessionInfo info;
    private final Sse.Runner runner;
    private final CompletableFuture<Void> attached = new CompletableFuture<>();
    private final CompletableFuture<Void> done = new CompletableFuture<>();
    private final Object closeMu = new Object();
    private volatile BatonException err;
    private volatile boolean closing;

    StreamSession(Client c, SessionInfo info, String path) {
        this.c = c;
        this.info = info;
        String what = "session " + info.id() + " stream";
        Duration grace = info.grace() != null && info.grace().toNanos() > 0 ? info.grace() : DEFAULT_GRACE;
        Sse.Source src = new Sse.Source() {
            @Override
            public Sse.Target target() {
                // No Last-Event-ID: a session's stream has nothing to resume.
                return new Sse.Target(path, Map.of(), 0);
            }

            @Override
            public void dispatch(String id, String type, String data) {
                if (type.equals("attached")) {
                    attached.complete(null);
                } else if (type.equals("ended")) {
                    // A refusal: no reconnection mends it.
                    throw new SessionNotFoundException(new Problem(404, "session_not_found", "Session not found", "the session ended",
                            null, null, what, null));
                }
            }
        };
        Duration half = grace.dividedBy(2);
        Duration idle = half.compareTo(MIN_GRACE.dividedBy(2)) < 0 ? MIN_GRACE.dividedBy(2) : half;
        this.runner = new Sse.Runner(c, what, src, this::ended, idle);
    }

    /** open starts holding the stream and returns once it is open; one that opens nowhere within the client's timeout ends the session. */
    StreamSession open() {
        runner.start();
        try {
            CompletableFuture.anyOf(attached, done).get(c.timeout().toNanos(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            // Neither attached nor refused: below.
        } catch (ExecutionException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            stopQuietly();
            throw new java.util.concurrent.CancellationException("interrupted opening the stream of session " + info.id());
        }
        if (attached.isDone()) {
            return this;
        }
        BatonException why = err;
        stopQuietly();
        if (why != null) {
            throw why;
        }
        throw new UnavailableException(Problem.unavailable(c.endpoint(0), "session " + info.id() + ": its stream did not open within "
                + c.timeout().toMillis() + " ms", "open stream session", null));
    }

    private void ended(BatonException why) {
        if (!closing) {
            err = why;
        }
        done.complete(null);
    }

    private void stopQuietly() {
        closing = true;
        runner.stop();
        done.complete(null);
        try {
            c.deleteSession(info.id());
        } catch (BatonException e) {
            // It ends by its grace.
        }
    }

    /** The session's ID: pass it as a hold's session. */
    public String id() {
        return info.id();
    }

    /** The session as created, with its bind and grace. */
    public SessionInfo info() {
        return info;
    }

    /**
     * A future that completes once the stream is no longer held: {@link #close()}
     * was called, or the session ended ({@link #err()} says why). Each call
     * returns a new copy.
     */
    public CompletableFuture<Void> done() {
        return done.copy();
    }

    /** Why the session ended without {@link #close()}: a {@link SessionNotFoundException} when a node said it is over; empty otherwise. */
    public Optional<BatonException> err() {
        return Optional.ofNullable(err);
    }

    /**
     * close stops holding the stream and deletes the session, releasing
     * every hold in it at once rather than after the grace. Calling it
     * again, or after the session ended, does nothing. When the delete gets
     * no answer it throws, and the session still ends, by its grace.
     */
    @Override
    public void close() {
        synchronized (closeMu) {
            if (closing || (done.isDone() && err != null)) {
                return;
            }
            // Before the delete: the stream's ended message is its doing.
            closing = true;
            try {
                c.deleteSession(info.id());
            } catch (SessionNotFoundException e) {
                // Over already.
            } finally {
                runner.stop();
                done.complete(null);
            }
        }
    }

    @Override
    public String toString() {
        return "StreamSession[" + info.id() + (done.isDone() ? ", done" : "") + "]";
    }
}
