package dev.baton.client;

/**
 * The node holds its maximum of sessions ({@link BatonException#limit()}); nothing was done.
 *
 * <p>Problem code {@code too_many_sessions}, status 429.
 */
public class TooManySessionsException extends BatonException {
    private static final long serialVersionUID = 1L;

    TooManySessionsException(Problem p) {
        super(p);
    }
}
