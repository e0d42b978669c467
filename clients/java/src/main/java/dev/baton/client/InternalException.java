package dev.baton.client;

/**
 * The server failed; every 5xx is an {@link UnavailableException}.
 *
 * <p>Problem code {@code internal}, status 500.
 */
public class InternalException extends UnavailableException {
    private static final long serialVersionUID = 1L;

    InternalException(Problem p) {
        super(p);
    }
}
