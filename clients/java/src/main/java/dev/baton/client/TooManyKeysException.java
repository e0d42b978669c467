package dev.baton.client;

/**
 * The put would make one key too many ({@link BatonException#limit()}); nothing was written, puts to existing keys still work.
 *
 * <p>Problem code {@code too_many_keys}, status 507.
 */
public class TooManyKeysException extends UnavailableException {
    private static final long serialVersionUID = 1L;

    TooManyKeysException(Problem p) {
        super(p);
    }
}
