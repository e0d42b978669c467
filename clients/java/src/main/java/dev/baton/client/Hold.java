package dev.baton.client;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * What every hold a {@link Client} grants shares: a {@link Lock}, a
 * {@link Leadership}, a {@link Permit}, an {@link RWHold}, a {@link LockSet}.
 * It renews itself in the background, at about a third of its TTL, until
 * {@link #release()} or until it is lost.
 *
 * <p>{@link #lost()} completes as soon as the hold is known lost: the audit
 * trail recorded its end (revoked, expired, its session ended, or released
 * by its token from elsewhere), which the Client's one event stream
 * delivers within milliseconds; a renew was answered {@code not_held} or
 * {@code token_mismatch}; or the TTL ran out by this client's clock with no
 * renew confirmed (a partition). It completes with a
 * {@link LockLostException} saying which. A clean release never completes
 * it.
 *
 * <p>{@code lost} can only tell after the fact: only work checked against
 * {@link #token()}, by whatever the hold protects, is safe from a holder
 * that lost its hold without knowing (see {@link Client#putFenced}).
 *
 * <p>{@link #close()} releases, so a hold fits try-with-resources; a hold
 * released already is not released again. Thread-safe.
 */
public abstract sealed class Hold implements AutoCloseable permits Lock, Permit, RWHold, LockSet, Leadership {
    final Keeper keeper;

    Hold(Keeper keeper) {
        this.keeper = keeper;
    }

    /** The name of what is held: the lock, election, semaphore or read/write lock; a lock set's names, comma-separated. */
    public String name() {
        return keeper.key.name();
    }

    /** The fencing token: pass it with every write the hold protects. It never changes while the hold lasts. */
    public long token() {
        return keeper.key.token();
    }

    /**
     * A future that completes, with why, when the hold is known lost. Each
     * call returns a new copy: completing it does not touch the hold.
     * Dependent stages run on the client's threads, never on the caller's.
     */
    public CompletableFuture<LockLostException> lost() {
        return keeper.lost().copy();
    }

    /** Whether the hold is known lost. */
    public boolean isLost() {
        return keeper.lostError() != null;
    }

    /** Why the hold was lost, or empty while it is held or after a clean release. */
    public Optional<LockLostException> lostCause() {
        return Optional.ofNullable(keeper.lostError());
    }

    /**
     * onYield calls callback with each request that this hold give way
     * ({@link Client#yield} and its kin), within milliseconds of it, from
     * the Client's event stream: the {@code yield_requested} {@link Event},
     * whose owner, credential and reason are the asker's. Requests heard
     * before the call are passed at once. It runs on the client's threads,
     * never the stream's. The hold stays held: release it if you choose to.
     */
    public void onYield(Consumer<Event> callback) {
        keeper.onYield(callback);
    }

    /**
     * release stops the renewal and gives the hold back with its token: a
     * lock to its next waiter, a permit to the oldest waiter, a leadership
     * to the next candidate. It throws the {@link LockLostException} when
     * the hold was lost before (it is given back all the same, in case the
     * server still has it). Calling it again does nothing more and gives
     * the same result: a hold is never released twice. When it gets no
     * answer ({@link UnavailableException}) another call tries again;
     * without one the lease runs out after its TTL.
     */
    public void release() {
        keeper.release();
    }

    /** close is {@link #release()}, for try-with-resources. */
    @Override
    public void close() {
        release();
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + keeper.key.kind() + " " + name() + ", token " + token()
                + (isLost() ? ", lost" : keeper.released() ? ", released" : "") + "]";
    }
}
