package dev.baton.client;

/**
 * Too many requests; try again after {@link BatonException#retryAfter()}.
 *
 * <p>Problem code {@code rate_limited}, status 429.
 */
public class RateLimitedException extends BatonException {
    private static final long serialVersionUID = 1L;

    RateLimitedException(Problem p) {
        super(p);
    }
}
