package dev.baton.client;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A baton lock as a {@link java.util.concurrent.locks.Lock}, so that code
 * written against {@code Lock}, or Curator's {@code InterProcessMutex}
 * shape, moves over in a line: {@code client.newLock(name, options)}.
 *
 * <p>Like {@code InterProcessMutex} it is re-entrant per thread: the thread
 * that holds it may lock it again, and the baton lock is released when it
 * has unlocked as often as it locked. Threads of one JVM sharing one
 * {@code BatonLock} queue on a local lock first, so only one of them asks
 * the cluster at a time. {@link #newCondition()} is not supported.
 *
 * <p>{@link #lock()} waits as long as it takes and, as the interface says,
 * goes on waiting when interrupted; {@link #lockInterruptibly()} and
 * {@link #tryLock(long, TimeUnit)} stop. With a session in the options it
 * waits at the session's place in line however long it takes (see
 * {@link Client#WAIT_FOREVER}); without one, in rounds of the options' wait
 * (30 s by default), at most the client's {@link Client#maxRequestWait()}
 * each. While held, {@link #token()} is the fencing token and
 * {@link #lost()} completes if the lock is lost; {@link #unlock()} then
 * throws the {@link LockLostException} after giving it back.
 */
public final class BatonLock implements java.util.concurrent.locks.Lock {
    private static final Duration DEFAULT_ROUND = Duration.ofSeconds(30);

    private final Client c;
    private final String name;
    private final AcquireOptions o;
    private final ReentrantLock local = new ReentrantLock(true);
    private volatile Lock held;

    BatonLock(Client c, String name, AcquireOptions o) {
        this.c = c;
        this.name = name;
        this.o = o;
    }

    /** The lock's name. */
    public String name() {
        return name;
    }

    /**
     * Acquires the lock, waiting as long as it takes, and ignoring interrupts
     * until it holds it (then the flag is set again).
     *
     * @throws BatonException when the cluster refuses the acquire (a bad
     *     name, no credential) or no node answers: {@link UnavailableException}
     */
    @Override
    public void lock() {
        boolean interrupted = false;
        for (;;) {
            try {
                lockInterruptibly();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Acquires the lock, waiting as long as it takes or until the thread is interrupted. */
    @Override
    public void lockInterruptibly() throws InterruptedException {
        local.lockInterruptibly();
        if (local.getHoldCount() > 1) {
            return;
        }
        try {
            Duration round = o.session != null ? longest() : min(o.wait != null && !o.wait.isZero() ? o.wait : DEFAULT_ROUND, longest());
            while (!remote(round)) {
                if (Thread.interrupted()) {
                    throw new InterruptedException();
                }
            }
        } catch (InterruptedException | RuntimeException e) {
            local.unlock();
            throw e;
        }
    }

    /** Acquires the lock only if it is free now: no wait. */
    @Override
    public boolean tryLock() {
        if (!local.tryLock()) {
            return false;
        }
        if (local.getHoldCount() > 1) {
            return true;
        }
        boolean ok = false;
        try {
            ok = remote(Duration.ZERO);
            return ok;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            if (!ok) {
                local.unlock();
            }
        }
    }

    /** Acquires the lock if it can within time, waiting in the cluster's line (first come, first served). */
    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        long end = System.nanoTime() + unit.toNanos(time);
        if (!local.tryLock(time, unit)) {
            return false;
        }
        if (local.getHoldCount() > 1) {
            return true;
        }
        boolean ok = false;
        try {
            do {
                long left = end - System.nanoTime();
                ok = remote(min(Duration.ofNanos(Math.max(left, 0)), longest()));
                if (Thread.interrupted()) {
                    if (ok) {
                        ok = false;
                        releaseQuietly();
                    }
                    throw new InterruptedException();
                }
            } while (!ok && end - System.nanoTime() > TimeUnit.MILLISECONDS.toNanos(1));
            return ok;
        } finally {
            if (!ok) {
                local.unlock();
            }
        }
    }

    /** The longest wait of one acquire: in a session, one that keeps its place in line, as long as it takes. */
    private Duration longest() {
        return o.session != null ? Client.WAIT_FOREVER : c.maxRequestWait();
    }

    /** remote asks the cluster once, waiting up to wait: true when it holds the lock. */
    private boolean remote(Duration wait) throws InterruptedException {
        AcquireOptions a = wait.isZero() ? o.waitFor(null) : o.waitFor(wait.compareTo(Duration.ofMillis(1)) < 0 ? Duration.ofMillis(1) : wait);
        try {
            held = c.acquire(name, a);
            return true;
        } catch (HeldException e) {
            return false;
        } catch (CancellationException e) {
            if (Thread.interrupted()) {
                throw new InterruptedException(e.getMessage());
            }
            throw e;
        }
    }

    private void releaseQuietly() {
        Lock h = held;
        held = null;
        if (h != null) {
            try {
                h.release();
            } catch (RuntimeException ignored) {
                // Lost, or no answer: it expires after its TTL.
            }
        }
    }

    /**
     * Releases the lock when the holding thread has unlocked as often as it
     * locked.
     *
     * @throws IllegalMonitorStateException when the current thread does not hold it
     * @throws LockLostException when the lock was lost while held (it is given back all the same)
     */
    @Override
    public void unlock() {
        if (!local.isHeldByCurrentThread()) {
            throw new IllegalMonitorStateException("baton: lock \"" + name + "\" is not held by this thread");
        }
        if (local.getHoldCount() > 1) {
            local.unlock();
            return;
        }
        Lock h = held;
        held = null;
        try {
            if (h != null) {
                h.release();
            }
        } finally {
            local.unlock();
        }
    }

    /** Not supported: a condition would need the lock's holder to wait across processes. */
    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("baton: BatonLock has no conditions");
    }

    /** Whether the current thread holds the lock. */
    public boolean isHeldByCurrentThread() {
        return local.isHeldByCurrentThread() && held != null;
    }

    /**
     * The fencing token of the hold.
     *
     * @throws IllegalMonitorStateException when the lock is not held
     */
    public long token() {
        return current().token();
    }

    /** The lost future of the hold (see {@link Hold#lost()}). @throws IllegalMonitorStateException when not held */
    public CompletableFuture<LockLostException> lost() {
        return current().lost();
    }

    /** The hold itself, while held. @throws IllegalMonitorStateException when not held */
    public Lock current() {
        Lock h = held;
        if (h == null) {
            throw new IllegalMonitorStateException("baton: lock \"" + name + "\" is not held");
        }
        return h;
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    @Override
    public String toString() {
        Lock h = held;
        return "BatonLock[" + name + (h == null ? ", free" : ", token " + h.token()) + "]";
    }
}
