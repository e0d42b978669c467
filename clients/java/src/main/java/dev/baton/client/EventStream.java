package dev.baton.client;

import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A live stream of events ({@link Client#events}) or of an election's
 * changes ({@link Client#observe}), connected in the background from its
 * creation and reconnected by itself (to the next endpoint, resuming with
 * Last-Event-ID) without a gap or a repeat. Read it with {@link #take()},
 * {@link #poll(Duration)} or a for-each loop; {@link #close()} ends it.
 * It holds at most 64 undelivered items: a reader that falls behind slows
 * the stream down (and a node that finds it too slow disconnects it; it
 * then resumes).
 *
 * @param <T> what it delivers
 */
public final class EventStream<T> implements AutoCloseable, Iterable<T> {
    private static final Object END = new Object();

    private final BlockingQueue<Object> q = new ArrayBlockingQueue<>(64);
    private final CompletableFuture<Void> ready;
    private volatile Sse.Runner runner;
    private volatile boolean closed;
    private volatile RuntimeException failure;

    EventStream(CompletableFuture<Void> ready) {
        this.ready = ready;
    }

    void run(Sse.Runner r) {
        runner = r;
        r.start();
    }

    /** put hands an item over, waiting while the reader is behind; false once closed. */
    void put(T v) {
        try {
            while (!closed) {
                if (q.offer(v, 100, TimeUnit.MILLISECONDS)) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw new CancellationException("stream closed");
    }

    /** fail ends the stream with e, after what is queued. */
    void fail(RuntimeException e) {
        failure = e;
        ready.complete(null);
        end();
    }

    private void end() {
        q.clear();
        q.offer(END);
    }

    /**
     * Completes once every event from then on will be delivered: for
     * {@code events()} without since, once the stream knows the revision it
     * starts after.
     */
    public CompletableFuture<Void> ready() {
        return ready.copy();
    }

    /**
     * take waits for the next item.
     *
     * @throws NoSuchElementException once the stream is closed
     * @throws BatonException when a node refused the stream (a bad filter, no credential)
     * @throws CancellationException when the thread was interrupted (its flag set again)
     */
    public T take() {
        try {
            return unwrap(q.take());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CancellationException("interrupted");
        }
    }

    /**
     * poll waits up to timeout for the next item.
     *
     * @return the item, or empty when none came in time
     * @throws NoSuchElementException once the stream is closed
     * @throws BatonException when a node refused the stream
     */
    public Optional<T> poll(Duration timeout) {
        try {
            Object o = q.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
            return o == null ? Optional.empty() : Optional.of(unwrap(o));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CancellationException("interrupted");
        }
    }

    @SuppressWarnings("unchecked")
    private T unwrap(Object o) {
        if (o == END) {
            q.offer(END); // for the next reader too
            if (failure != null && !closed) {
                throw failure;
            }
            throw new NoSuchElementException("stream closed");
        }
        return (T) o;
    }

    /** An iterator over the items, blocking in hasNext; it ends when the stream is closed, and throws what refused it. */
    @Override
    public Iterator<T> iterator() {
        return new Iterator<>() {
            private T next;

            @Override
            public boolean hasNext() {
                if (next != null) {
                    return true;
                }
                try {
                    next = take();
                    return true;
                } catch (NoSuchElementException e) {
                    return false;
                }
            }

            @Override
            public T next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                T v = next;
                next = null;
                return v;
            }
        };
    }

    /** Whether the stream is connected to a node now. */
    public boolean connected() {
        Sse.Runner r = runner;
        return r != null && r.connected();
    }

    /** close ends the stream and its connection; readers get the end. */
    @Override
    public void close() {
        closed = true;
        Sse.Runner r = runner;
        if (r != null) {
            r.stop();
        }
        ready.complete(null);
        end();
    }
}
