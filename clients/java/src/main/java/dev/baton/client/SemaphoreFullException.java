package dev.baton.client;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Every permit of the semaphore is taken and the wait ran out (at once
 * without a wait); {@link #holders()} are the permits held.
 *
 * <p>Problem code {@code semaphore_full}, status 409.
 */
public class SemaphoreFullException extends BatonException {
    private static final long serialVersionUID = 1L;

    SemaphoreFullException(Problem p) {
        super(p);
    }

    /** The permits held, oldest first, when the server said. */
    public List<HoldInfo> holders() {
        List<HoldInfo> out = new ArrayList<>();
        for (Object o : Json.list(problem(), "holders")) {
            out.add(HoldInfo.from(Json.obj(o)));
        }
        return Collections.unmodifiableList(out);
    }
}
