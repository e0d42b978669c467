package dev.baton.client;

/**
 * The cluster holds its maximum of locks ({@link BatonException#limit()}); nothing was done.
 *
 * <p>Problem code {@code too_many_locks}, status 429.
 */
public class TooManyLocksException extends BatonException {
    private static final long serialVersionUID = 1L;

    TooManyLocksException(Problem p) {
        super(p);
    }
}
