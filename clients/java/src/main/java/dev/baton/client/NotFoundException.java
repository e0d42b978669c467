package dev.baton.client;

/**
 * No such fenced value (or other resource).
 *
 * <p>Problem code {@code not_found}, status 404.
 */
public class NotFoundException extends BatonException {
    private static final long serialVersionUID = 1L;

    NotFoundException(Problem p) {
        super(p);
    }
}
