package dev.baton.client;

/**
 * What else a fenced write requires of its token, besides being no lower
 * than any the resource has seen: that it holds a lock, leads an election,
 * or is a read/write lock's current write hold, at that moment
 * ({@link NotHolderException} otherwise).
 *
 * @param lock the lock the token must hold, or null
 * @param election the election the token must lead, or null
 * @param rwlock the read/write lock whose write hold the token must be, or null
 */
public record FenceOptions(String lock, String election, String rwlock) {
    /** No requirement but the token's order. */
    public static FenceOptions none() {
        return new FenceOptions(null, null, null);
    }

    /** The token must hold this lock. */
    public static FenceOptions lock(String name) {
        return new FenceOptions(name, null, null);
    }

    /** The token must lead this election, exactly that leadership. */
    public static FenceOptions election(String name) {
        return new FenceOptions(null, name, null);
    }

    /** The token must be this read/write lock's current write hold. */
    public static FenceOptions rwlock(String name) {
        return new FenceOptions(null, null, name);
    }
}
