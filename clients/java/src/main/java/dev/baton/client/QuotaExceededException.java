package dev.baton.client;

/**
 * The credential reached one of its quotas ({@link BatonException#quota()}
 * says which, {@link BatonException#limit()} its value); nothing was done.
 * Try again after {@link BatonException#retryAfter()}.
 *
 * <p>Problem code {@code quota_exceeded}, status 429.
 */
public class QuotaExceededException extends BatonException {
    private static final long serialVersionUID = 1L;

    QuotaExceededException(Problem p) {
        super(p);
    }
}
