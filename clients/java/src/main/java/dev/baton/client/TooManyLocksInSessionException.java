package dev.baton.client;

/**
 * The session holds its maximum of locks ({@link BatonException#limit()}).
 *
 * <p>Problem code {@code too_many_locks_in_session}, status 409.
 */
public class TooManyLocksInSessionException extends BatonException {
    private static final long serialVersionUID = 1L;

    TooManyLocksInSessionException(Problem p) {
        super(p);
    }
}
