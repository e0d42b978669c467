package dev.baton.client;

import java.time.Duration;
import java.util.Map;

/**
 * How to take a lock, a lock set, a permit or a read/write lock's hold.
 * Immutable: each method returns a copy with one more setting, so one
 * instance can be shared.
 *
 * <pre>{@code
 * AcquireOptions o = AcquireOptions.defaults().ttl(Duration.ofSeconds(30)).waitFor(Duration.ofMinutes(1)).owner("worker-1");
 * }</pre>
 */
public final class AcquireOptions {
    private static final AcquireOptions DEFAULTS = new AcquireOptions(null, null, null, null, null, null, null);

    final String owner;
    final Duration ttl;
    final String session;
    final Duration wait;
    final Duration lockDelay;
    final Duration minHold;
    final Map<String, String> metadata;

    private AcquireOptions(String owner, Duration ttl, String session, Duration wait, Duration lockDelay, Duration minHold,
            Map<String, String> metadata) {
        this.owner = owner;
        this.ttl = ttl;
        this.session = session;
        this.wait = wait;
        this.lockDelay = lockDelay;
        this.minHold = minHold;
        this.metadata = metadata;
    }

    /** The server's defaults: a 30 s TTL, no wait (a held lock fails at once with {@link HeldException}). */
    public static AcquireOptions defaults() {
        return DEFAULTS;
    }

    /** A label for people and the audit trail; default the client's address as the server sees it. */
    public AcquireOptions owner(String owner) {
        return new AcquireOptions(owner, ttl, session, wait, lockDelay, minHold, metadata);
    }

    /** The lease's time to live, 2 s to 24 h; default 30 s. Not with a session. */
    public AcquireOptions ttl(Duration ttl) {
        return new AcquireOptions(owner, ttl, session, wait, lockDelay, minHold, metadata);
    }

    /** Puts the hold in a session (its ID): it lives and dies with it. */
    public AcquireOptions session(String session) {
        return new AcquireOptions(owner, ttl, session, wait, lockDelay, minHold, metadata);
    }

    /**
     * Wait in line for up to this long, first come first served; default:
     * fail at once. A wait over the client's {@link Client#maxRequestWait()}
     * (5 min), up to {@link Client#WAIT_FOREVER}, needs a {@link #session(String)}
     * (lock sets wait at most 5 min).
     */
    public AcquireOptions waitFor(Duration wait) {
        return new AcquireOptions(owner, ttl, session, wait, lockDelay, minHold, metadata);
    }

    /** A single lock's lock-delay (Chubby's): after an expiry or revoke, nobody takes it again for this long. Locks only. */
    public AcquireOptions lockDelay(Duration lockDelay) {
        return new AcquireOptions(owner, ttl, session, wait, lockDelay, minHold, metadata);
    }

    /**
     * The hold's at-least window, up to 24 h: however early it ends (a
     * release, an expiry, a revoke), nobody else is granted it before its
     * acquiredAt plus minHold, and their refusal carries
     * {@link BatonException#retryAfter()}. A permit's seat stays taken that
     * long; a read/write lock's write hold keeps everyone out, a read hold
     * writers. Each lock of a lock set has it.
     */
    public AcquireOptions minHold(Duration minHold) {
        return new AcquireOptions(owner, ttl, session, wait, lockDelay, minHold, metadata);
    }

    /** Labels shown with the hold: at most 16 pairs, 4 KiB in all. */
    public AcquireOptions metadata(Map<String, String> metadata) {
        return new AcquireOptions(owner, ttl, session, wait, lockDelay, minHold, Map.copyOf(metadata));
    }

    /** The wait asked for, or null. */
    public Duration waitFor() {
        return wait;
    }
}
