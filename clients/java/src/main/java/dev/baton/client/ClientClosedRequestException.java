package dev.baton.client;

/**
 * The caller left before the answer (nginx's 499): nobody normally reads it.
 *
 * <p>Problem code {@code client_closed_request}, status 499.
 */
public class ClientClosedRequestException extends BatonException {
    private static final long serialVersionUID = 1L;

    ClientClosedRequestException(Problem p) {
        super(p);
    }
}
