package dev.baton.client;

/**
 * The request's body is over the server's limit.
 *
 * <p>Problem code {@code body_too_large}, status 413.
 */
public class BodyTooLargeException extends BatonException {
    private static final long serialVersionUID = 1L;

    BodyTooLargeException(Problem p) {
        super(p);
    }
}
