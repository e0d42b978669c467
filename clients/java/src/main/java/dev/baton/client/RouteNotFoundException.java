package dev.baton.client;

/**
 * No such route: the endpoint is not baton, or of an older version.
 *
 * <p>Problem code {@code route_not_found}, status 404.
 */
public class RouteNotFoundException extends BatonException {
    private static final long serialVersionUID = 1L;

    RouteNotFoundException(Problem p) {
        super(p);
    }
}
