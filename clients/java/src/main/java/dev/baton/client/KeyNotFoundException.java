package dev.baton.client;

/**
 * The key does not exist; {@link BatonException#revision()} is the revision it was found missing at, to wait from.
 *
 * <p>Problem code {@code key_not_found}, status 404.
 */
public class KeyNotFoundException extends BatonException {
    private static final long serialVersionUID = 1L;

    KeyNotFoundException(Problem p) {
        super(p);
    }
}
