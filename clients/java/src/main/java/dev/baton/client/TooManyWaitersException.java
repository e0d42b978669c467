package dev.baton.client;

/**
 * The lock's line is at its cap ({@link BatonException#limit()}); nothing was done. Try again after {@link BatonException#retryAfter()}.
 *
 * <p>Problem code {@code too_many_waiters}, status 429.
 */
public class TooManyWaitersException extends BatonException {
    private static final long serialVersionUID = 1L;

    TooManyWaitersException(Problem p) {
        super(p);
    }
}
