package dev.baton.client;

import java.util.List;

/**
 * Several locks held together, granted at once with one fencing token:
 * {@link Client#acquireSet}. It renews itself (one lease, or the session,
 * for all of them) until {@link #release()} or until it is lost.
 *
 * <p>Each lock of a set is an ordinary lock that can be renewed, released
 * and revoked on its own, and the set is whole only while every one is
 * held: {@link #lost()} completes as soon as any of them is known lost, and
 * its {@link LockLostException} names the lock.
 */
public final class LockSet extends Hold {
    private final List<String> names;
    private volatile LockSetInfo info;

    LockSet(Keeper keeper, LockSetInfo info) {
        super(keeper);
        this.names = List.copyOf(info.names());
        this.info = info;
    }

    /** The set's locks, in the order the acquire gave them. */
    public List<String> names() {
        return names;
    }

    /** The set as the latest acquire or renew described it. */
    public LockSetInfo info() {
        return info;
    }

    /**
     * renew renews the set now, besides the background renewal.
     *
     * @return the set as the answer describes it
     * @throws LockLostException when the set was lost before, or a lock of it is found lost
     */
    public LockSetInfo renew() {
        keeper.renewNow();
        return info;
    }

    void record(LockSetInfo i) {
        info = i;
    }
}
