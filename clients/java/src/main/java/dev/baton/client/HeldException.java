package dev.baton.client;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;

/**
 * Someone else holds the lock and the wait ran out (at once without a
 * wait), or lock-delay forbids taking it for {@link #retryAfter()}.
 * {@link #holder()} is the holder of a lock; {@link #holders()} the holds
 * in the way of a read/write lock's hold, or the locks of a lock set
 * held by others.
 *
 * <p>Problem code {@code lock_held}, status 409.
 */
public class HeldException extends BatonException {
    private static final long serialVersionUID = 1L;

    HeldException(Problem p) {
        super(p);
    }

    /** The lock's current holder, when the server said (a single lock's {@code lock_held}). */
    public Optional<LockInfo> holder() {
        Object h = problem().get("holder");
        return h instanceof java.util.Map<?, ?> ? Optional.of(LockInfo.from(Json.obj(h))) : Optional.empty();
    }

    /** The holds in the way, oldest first: a read/write lock's (each with its mode), or a lock set's locks held by others. */
    public List<HoldInfo> holders() {
        List<HoldInfo> out = new ArrayList<>();
        for (Object o : Json.list(problem(), "holders")) {
            out.add(HoldInfo.from(Json.obj(o)));
        }
        return Collections.unmodifiableList(out);
    }
}
