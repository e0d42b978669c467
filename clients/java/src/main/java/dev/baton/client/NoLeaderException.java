package dev.baton.client;

/**
 * Nobody leads the election (with this token).
 *
 * <p>Problem code {@code no_leader}, status 404.
 */
public class NoLeaderException extends BatonException {
    private static final long serialVersionUID = 1L;

    NoLeaderException(Problem p) {
        super(p);
    }
}
