package dev.baton.client;

/**
 * What a key's put compares, binds and requires. Immutable: each method
 * returns a copy with one more setting, so one instance can be shared.
 *
 * <pre>{@code
 * PutKeyOptions o = PutKeyOptions.defaults().ifRevision(0).session(s.id());   // create only, bound to s
 * }</pre>
 */
public final class PutKeyOptions {
    private static final PutKeyOptions DEFAULTS = new PutKeyOptions(null, null, null);

    final Long ifRevision;
    final String session;
    final Fence fence;

    private PutKeyOptions(Long ifRevision, String session, Fence fence) {
        this.ifRevision = ifRevision;
        this.session = session;
        this.fence = fence;
    }

    /** An unconditional put, bound to no session. */
    public static PutKeyOptions defaults() {
        return DEFAULTS;
    }

    /**
     * Makes the put a compare-and-set: it happens only if the key's
     * revision is this one (0: the key must not exist). Otherwise
     * {@link RevisionMismatchException}, whose {@link BatonException#revision()}
     * is the key's (0: absent).
     */
    public PutKeyOptions ifRevision(long revision) {
        return new PutKeyOptions(revision, session, fence);
    }

    /** Binds the key to this session (its ID): it is deleted when the session ends. A put without it unbinds the key. */
    public PutKeyOptions session(String session) {
        return new PutKeyOptions(ifRevision, session, fence);
    }

    /** The put happens only while this hold is current. */
    public PutKeyOptions fence(Fence fence) {
        return new PutKeyOptions(ifRevision, session, fence);
    }
}
