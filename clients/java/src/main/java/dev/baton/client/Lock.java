package dev.baton.client;

/**
 * A held lock that renews itself until {@link #release()} or until it is
 * lost: {@link Client#acquire}. See {@link Hold} for the lost signal and
 * how release behaves; {@link BatonLock} adapts a lock to
 * {@link java.util.concurrent.locks.Lock}.
 *
 * <pre>{@code
 * try (Lock lk = client.acquire("nightly-recon", AcquireOptions.defaults().ttl(Duration.ofSeconds(30)))) {
 *     client.putFenced("ledger", lk.token(), Map.of("rows", 3), FenceOptions.lock("nightly-recon"));
 * }
 * }</pre>
 */
public final class Lock extends Hold {
    private volatile LockInfo info;

    Lock(Keeper keeper, LockInfo info) {
        super(keeper);
        this.info = info;
    }

    /** The lock as the latest acquire or renew described it. */
    public LockInfo info() {
        return info;
    }

    void record(LockInfo i) {
        info = i.metadata().isEmpty() && !info.metadata().isEmpty()
                ? new LockInfo(i.name(), i.owner(), i.token(), i.session(), i.ttl(), i.acquiredAt(), i.expiresAt(), i.lockDelay(),
                        i.minHold(), info.metadata(), i.set(), i.waiters())
                : i;
    }
}
