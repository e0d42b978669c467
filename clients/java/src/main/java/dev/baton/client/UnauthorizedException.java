package dev.baton.client;

/**
 * No valid bearer token (the node runs with {@code --auth-file}). Any 401 is one.
 *
 * <p>Problem code {@code unauthorized}, status 401.
 */
public class UnauthorizedException extends BatonException {
    private static final long serialVersionUID = 1L;

    UnauthorizedException(Problem p) {
        super(p);
    }
}
