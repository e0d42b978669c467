package dev.baton.client;

/**
 * The data store is full ({@code /readyz} while etcd's NOSPACE alarm is raised).
 *
 * <p>Problem code {@code nospace}, status 503.
 */
public class NoSpaceException extends UnavailableException {
    private static final long serialVersionUID = 1L;

    NoSpaceException(Problem p) {
        super(p);
    }
}
