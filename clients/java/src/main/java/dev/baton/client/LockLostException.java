package dev.baton.client;

import java.util.Optional;

/**
 * Why a hold (a {@link Lock}, {@link Leadership}, {@link Permit},
 * {@link RWHold} or {@link LockSet}) was lost: the value its
 * {@link Hold#lost()} future completes with, and what {@link Hold#release()}
 * throws for a hold lost before. {@link #getCause()} says how the loss
 * became known: a renew's answer (a {@link BatonException}), or nothing
 * when the audit trail's {@link #event()} told it, or when the lease ran
 * out by this client's clock.
 */
public class LockLostException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String kind;
    private final String lockName;
    private final long token;
    private final transient Event event;

    LockLostException(String kind, String name, long token, String why, Throwable cause, Event event) {
        super("baton: " + what(kind, name) + " (token " + token + ") lost: " + why, cause);
        this.kind = kind;
        this.lockName = name;
        this.token = token;
        this.event = event;
    }

    private static String what(String kind, String name) {
        return switch (kind) {
            case Keeper.ELECTION -> "leadership of \"" + name + "\"";
            case Keeper.SEMAPHORE -> "permit of semaphore \"" + name + "\"";
            case Keeper.RWLOCK -> "hold of read/write lock \"" + name + "\"";
            case Keeper.LOCKSET -> "lock set \"" + name + "\"";
            default -> "lock \"" + name + "\"";
        };
    }

    /** "lock", "election", "semaphore", "rwlock" or "lockset". */
    public String kind() {
        return kind;
    }

    /** The name of what was held; a lock set's names, comma-separated. */
    public String lockName() {
        return lockName;
    }

    /** The lost hold's fencing token. */
    public long token() {
        return token;
    }

    /** The event that recorded the hold's end, when that is how the loss was learned. */
    public Optional<Event> event() {
        return Optional.ofNullable(event);
    }
}
