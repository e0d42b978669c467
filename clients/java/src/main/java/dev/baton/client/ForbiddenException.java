package dev.baton.client;

/**
 * The credential's role or prefixes do not allow the call: {@link
 * BatonException#role()} is the role the call needs, and {@link
 * BatonException#prefixes()}, for a credential scoped to name prefixes,
 * the names it may act on. Any 403 is one.
 *
 * <p>Problem code {@code forbidden}, status 403.
 */
public class ForbiddenException extends BatonException {
    private static final long serialVersionUID = 1L;

    ForbiddenException(Problem p) {
        super(p);
    }
}
