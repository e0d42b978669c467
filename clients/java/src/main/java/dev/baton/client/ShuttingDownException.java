package dev.baton.client;

/**
 * The node is shutting down; another node may serve the call.
 *
 * <p>Problem code {@code shutting_down}, status 503.
 */
public class ShuttingDownException extends UnavailableException {
    private static final long serialVersionUID = 1L;

    ShuttingDownException(Problem p) {
        super(p);
    }
}
