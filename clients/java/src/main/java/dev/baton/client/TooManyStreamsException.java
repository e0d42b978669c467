package dev.baton.client;

/**
 * This client address or credential has its maximum of event streams open on the node (429), or the node serves its maximum (503).
 *
 * <p>Problem code {@code too_many_streams}, status 429.
 */
public class TooManyStreamsException extends BatonException {
    private static final long serialVersionUID = 1L;

    TooManyStreamsException(Problem p) {
        super(p);
    }
}
