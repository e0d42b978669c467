package dev.baton.client;

/**
 * The lock is not under lock-delay.
 *
 * <p>Problem code {@code not_delayed}, status 404.
 */
public class NotDelayedException extends BatonException {
    private static final long serialVersionUID = 1L;

    NotDelayedException(Problem p) {
        super(p);
    }
}
