package dev.baton.client;

/**
 * What a key's delete compares and requires. Immutable: each method
 * returns a copy with one more setting.
 */
public final class DeleteKeyOptions {
    private static final DeleteKeyOptions DEFAULTS = new DeleteKeyOptions(null, null);

    final Long ifRevision;
    final Fence fence;

    private DeleteKeyOptions(Long ifRevision, Fence fence) {
        this.ifRevision = ifRevision;
        this.fence = fence;
    }

    /** An unconditional delete. */
    public static DeleteKeyOptions defaults() {
        return DEFAULTS;
    }

    /** Deletes the key only at this revision ({@link RevisionMismatchException} otherwise). */
    public DeleteKeyOptions ifRevision(long revision) {
        return new DeleteKeyOptions(revision, fence);
    }

    /** Deletes it only while this hold is current. */
    public DeleteKeyOptions fence(Fence fence) {
        return new DeleteKeyOptions(ifRevision, fence);
    }
}
