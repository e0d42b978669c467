package dev.baton.client;

/**
 * A leadership transfer named a candidate with no campaign waiting in
 * line; the leader still leads.
 *
 * <p>Problem code {@code candidate_not_waiting}, status 409.
 */
public class CandidateNotWaitingException extends BatonException {
    private static final long serialVersionUID = 1L;

    CandidateNotWaitingException(Problem p) {
        super(p);
    }
}
