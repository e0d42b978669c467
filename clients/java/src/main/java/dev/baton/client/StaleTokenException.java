package dev.baton.client;

/**
 * A fenced write carried a token below one the resource has seen: {@link BatonException#maxToken()}. Stop; do not retry with this token.
 *
 * <p>Problem code {@code stale_token}, status 409.
 */
public class StaleTokenException extends BatonException {
    private static final long serialVersionUID = 1L;

    StaleTokenException(Problem p) {
        super(p);
    }
}
