package dev.baton.client;

/**
 * The semaphore's permits are held or waited for under another limit: {@link BatonException#limit()} is the semaphore's.
 *
 * <p>Problem code {@code limit_mismatch}, status 409.
 */
public class LimitMismatchException extends BatonException {
    private static final long serialVersionUID = 1L;

    LimitMismatchException(Problem p) {
        super(p);
    }
}
