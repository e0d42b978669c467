package dev.baton.client;

/**
 * A read/write lock's hold, a reader's or the writer's:
 * {@link Client#acquireRW}. It renews itself until {@link #release()} or
 * until it is lost, as a {@link Lock} does. Its token is the hold's own; a
 * write hold's is greater than that of every hold that ended before it,
 * and a fenced write naming the rwlock accepts the current write hold's
 * token only.
 */
public final class RWHold extends Hold {
    private volatile HoldInfo info;

    RWHold(Keeper keeper, HoldInfo info) {
        super(keeper);
        this.info = info;
    }

    /** {@link RWMode#READ} or {@link RWMode#WRITE}. */
    public RWMode mode() {
        return RWMode.of(info.mode());
    }

    /** The hold as the latest acquire or renew described it. */
    public HoldInfo info() {
        return info;
    }

    void record(HoldInfo i) {
        HoldInfo old = info;
        info = i.mode() == null ? new HoldInfo(i.name(), i.owner(), i.token(), i.limit(), old.mode(), i.session(), i.ttl(),
                i.acquiredAt(), i.expiresAt(), i.minHold(), i.metadata()) : i;
    }
}
