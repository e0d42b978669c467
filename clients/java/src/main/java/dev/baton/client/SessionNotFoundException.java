package dev.baton.client;

/**
 * The session expired, was deleted or never was.
 *
 * <p>Problem code {@code session_not_found}, status 404.
 */
public class SessionNotFoundException extends BatonException {
    private static final long serialVersionUID = 1L;

    SessionNotFoundException(Problem p) {
        super(p);
    }
}
