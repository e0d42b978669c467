package dev.baton.client;

/**
 * An election won: {@link Client#campaign}. It renews itself until
 * {@link #resign()} or until it is lost, by the same machinery as a
 * {@link Lock}; {@link #lost()} completes within milliseconds of a revoke,
 * an expiry or a resignation elsewhere. Its token fences the leader's
 * writes: {@code client.putFenced(resource, ld.token(), value, FenceOptions.election(ld.name()))}.
 * {@link #close()} resigns.
 */
public final class Leadership extends Hold {
    private final Client c;
    private volatile LeaderInfo info;
    // proclaims counts proclaim calls begun, so that a renew answered
    // before a proclaim does not bring an older value back.
    private volatile int proclaims;

    Leadership(Keeper keeper, Client c, LeaderInfo info) {
        super(keeper);
        this.c = c;
        this.info = info;
    }

    /** The leadership's term: the count of leaders the election has had, this one included. */
    public long term() {
        return info.term();
    }

    /** The leader's value as the latest campaign, renew or proclaim answer described it. */
    public Object value() {
        return info.value();
    }

    /** The leadership as the latest campaign, renew or proclaim described it. */
    public LeaderInfo info() {
        return info;
    }

    /**
     * proclaim sets the leader's value, keeping token and term; observers are
     * told.
     *
     * @param value any value {@link Json} writes
     * @throws NoLeaderException or {@link TokenMismatchException} when the leadership is over ({@link #lost()} completes soon after)
     */
    public synchronized void proclaim(Object value) {
        proclaims++;
        info = c.proclaim(name(), token(), value);
    }

    /**
     * resign stops the renewal and ends the leadership with its token; the
     * first candidate in line leads next. It throws the
     * {@link LockLostException} when the leadership was lost before. Calling
     * it again does nothing more and gives the same result.
     */
    public void resign() {
        release();
    }

    /**
     * transfer hands the leadership to the candidate to, which must be
     * waiting in line, ahead of the others ({@link Client#transferLeadership}),
     * and returns the new leader's. The leadership is then over, as after
     * {@link #resign()}: {@link #lost()} does not complete. When the transfer
     * is refused and the leadership goes on, or gets no answer, it keeps
     * renewing itself and the refusal is thrown.
     *
     * @throws CandidateNotWaitingException when to has no campaign waiting; the leadership goes on
     * @throws ElectionHeldException inside the leadership's at-least window; the leadership goes on
     * @throws LockLostException when the leadership was lost before
     */
    public LeaderInfo transfer(String to) {
        return keeper.handOn(() -> c.transferLeadership(name(), token(), to));
    }

    java.time.Duration renew(java.time.Duration timeout) {
        int seq = proclaims;
        LeaderInfo i = c.renewLeadership(name(), token(), timeout);
        synchronized (this) {
            if (proclaims != seq) {
                i = new LeaderInfo(i.name(), i.candidate(), info.value(), i.token(), i.term(), i.session(), i.ttl(), i.electedAt(),
                        i.expiresAt(), i.lockDelay(), i.minHold(), i.metadata(), i.candidates());
            }
            info = i;
        }
        return i.ttl();
    }
}
