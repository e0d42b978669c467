package dev.baton.client;

/**
 * The route does not take this method.
 *
 * <p>Problem code {@code method_not_allowed}, status 405.
 */
public class MethodNotAllowedException extends BatonException {
    private static final long serialVersionUID = 1L;

    MethodNotAllowedException(Problem p) {
        super(p);
    }
}
