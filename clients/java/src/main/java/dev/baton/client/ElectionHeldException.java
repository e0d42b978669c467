package dev.baton.client;

import java.util.Optional;

/**
 * The election has a leader and the campaign's wait ran out (at once
 * without a wait); {@link #leader()} is the leader.
 *
 * <p>Problem code {@code election_held}, status 409.
 */
public class ElectionHeldException extends BatonException {
    private static final long serialVersionUID = 1L;

    ElectionHeldException(Problem p) {
        super(p);
    }

    /** The current leader, when the server said. */
    public Optional<LeaderInfo> leader() {
        Object l = problem().get("leader");
        return l instanceof java.util.Map<?, ?> ? Optional.of(LeaderInfo.from(Json.obj(l))) : Optional.empty();
    }
}
