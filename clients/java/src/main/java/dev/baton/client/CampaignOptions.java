package dev.baton.client;

import java.time.Duration;
import java.util.Map;

/** How to campaign for an election. Immutable, like {@link AcquireOptions}. */
public final class CampaignOptions {
    private static final CampaignOptions DEFAULTS = new CampaignOptions(null, null, null, null, null, null, null, false);

    final String candidate;
    final Object value;
    final Duration ttl;
    final String session;
    final Duration wait;
    final Duration minHold;
    final Map<String, String> metadata;
    final boolean hasValue;

    private CampaignOptions(String candidate, Object value, Duration ttl, String session, Duration wait, Duration minHold,
            Map<String, String> metadata, boolean hasValue) {
        this.candidate = candidate;
        this.value = value;
        this.ttl = ttl;
        this.session = session;
        this.wait = wait;
        this.minHold = minHold;
        this.metadata = metadata;
        this.hasValue = hasValue;
    }

    /** The server's defaults: a 30 s TTL, no wait (a led election fails at once with {@link ElectionHeldException}). */
    public static CampaignOptions defaults() {
        return DEFAULTS;
    }

    /** Labels the leader; default the client's address. */
    public CampaignOptions candidate(String candidate) {
        return new CampaignOptions(candidate, value, ttl, session, wait, minHold, metadata, hasValue);
    }

    /** What the leader publishes (its address, say): any value {@link Json} writes, at most 4 KiB. */
    public CampaignOptions value(Object value) {
        return new CampaignOptions(candidate, value, ttl, session, wait, minHold, metadata, true);
    }

    /** The lease's time to live, 2 s to 24 h; default 30 s. Not with a session. */
    public CampaignOptions ttl(Duration ttl) {
        return new CampaignOptions(candidate, value, ttl, session, wait, minHold, metadata, hasValue);
    }

    /** Campaign in a session (its ID). */
    public CampaignOptions session(String session) {
        return new CampaignOptions(candidate, value, ttl, session, wait, minHold, metadata, hasValue);
    }

    /**
     * Wait in line to lead for up to this long; default: fail at once. A
     * wait over the client's {@link Client#maxRequestWait()} (5 min), up to
     * {@link Client#WAIT_FOREVER}, needs a {@link #session(String)}.
     */
    public CampaignOptions waitFor(Duration wait) {
        return new CampaignOptions(candidate, value, ttl, session, wait, minHold, metadata, hasValue);
    }

    /**
     * The leadership's at-least window, up to 24 h: however early it ends
     * (a resignation, an expiry, a revoke), nobody else leads before its
     * electedAt plus minHold.
     */
    public CampaignOptions minHold(Duration minHold) {
        return new CampaignOptions(candidate, value, ttl, session, wait, minHold, metadata, hasValue);
    }

    /** Labels shown with the leader: at most 16 pairs, 4 KiB in all. */
    public CampaignOptions metadata(Map<String, String> metadata) {
        return new CampaignOptions(candidate, value, ttl, session, wait, minHold, Map.copyOf(metadata), hasValue);
    }
}
