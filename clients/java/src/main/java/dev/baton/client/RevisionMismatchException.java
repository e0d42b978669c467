package dev.baton.client;

/**
 * A compare-and-set lost: {@link BatonException#revision()} is the key's revision (0: it does not exist); nothing was written.
 *
 * <p>Problem code {@code revision_mismatch}, status 409.
 */
public class RevisionMismatchException extends BatonException {
    private static final long serialVersionUID = 1L;

    RevisionMismatchException(Problem p) {
        super(p);
    }
}
