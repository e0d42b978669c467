package dev.baton.client;

/**
 * A state-changing request marked as cross-site by a browser.
 *
 * <p>Problem code {@code cross_origin}, status 403.
 */
public class CrossOriginException extends ForbiddenException {
    private static final long serialVersionUID = 1L;

    CrossOriginException(Problem p) {
        super(p);
    }
}
