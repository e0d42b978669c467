package dev.baton.client;

/**
 * A fenced write carried a token greater than any the cluster has issued.
 *
 * <p>Problem code {@code unknown_token}, status 409.
 */
public class UnknownTokenException extends BatonException {
    private static final long serialVersionUID = 1L;

    UnknownTokenException(Problem p) {
        super(p);
    }
}
