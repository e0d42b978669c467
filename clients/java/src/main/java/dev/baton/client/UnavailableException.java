package dev.baton.client;

/**
 * No node could serve the call: no etcd quorum, a node shutting down or
 * unreachable, no answer within the timeout, any 5xx. For a call that is
 * not idempotent (an acquire outside a session, a campaign, a permit) the
 * outcome is then unknown: it may have taken effect, and a lock taken
 * that way expires after its TTL; {@link #outcomeUnknown()} says so.
 *
 * <p>Problem code {@code unavailable}, status 503, and every answer
 * without one that is a 5xx or no answer at all.
 */
public class UnavailableException extends BatonException {
    private static final long serialVersionUID = 1L;

    private final boolean outcomeUnknown;

    UnavailableException(Problem p) {
        this(p, false);
    }

    UnavailableException(Problem p, boolean outcomeUnknown) {
        super(p);
        this.outcomeUnknown = outcomeUnknown;
    }

    /** True when the call may have taken effect although no answer said so. */
    public boolean outcomeUnknown() {
        return outcomeUnknown;
    }
}
