package dev.baton.client;

/**
 * One of a semaphore's permits: {@link Client#acquirePermit}. It renews
 * itself until {@link #release()} or until it is lost, as a {@link Lock}
 * does. Its token is the permit's own fencing token.
 */
public final class Permit extends Hold {
    private volatile HoldInfo info;

    Permit(Keeper keeper, HoldInfo info) {
        super(keeper);
        this.info = info;
    }

    /** How many permits the semaphore has. */
    public long limit() {
        return info.limit();
    }

    /** The permit as the latest acquire or renew described it. */
    public HoldInfo info() {
        return info;
    }

    void record(HoldInfo i) {
        info = i;
    }
}
