package dev.baton.client;

/**
 * The Host is not one the node answers ({@code --allowed-hosts}).
 *
 * <p>Problem code {@code host_not_allowed}, status 421.
 */
public class HostNotAllowedException extends BatonException {
    private static final long serialVersionUID = 1L;

    HostNotAllowedException(Problem p) {
        super(p);
    }
}
