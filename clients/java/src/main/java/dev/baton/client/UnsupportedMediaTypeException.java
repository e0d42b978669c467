package dev.baton.client;

/**
 * A request with a body that was not {@code application/json}.
 *
 * <p>Problem code {@code unsupported_media_type}, status 415.
 */
public class UnsupportedMediaTypeException extends BatonException {
    private static final long serialVersionUID = 1L;

    UnsupportedMediaTypeException(Problem p) {
        super(p);
    }
}
