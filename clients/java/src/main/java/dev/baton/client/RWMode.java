package dev.baton.client;

/** A read/write lock's hold mode: readers share, a writer excludes everyone. */
public enum RWMode {
    /** Shared with other readers. */
    READ,
    /** Alone. */
    WRITE;

    String wire() {
        return this == READ ? "read" : "write";
    }

    static RWMode of(String s) {
        return "write".equals(s) ? WRITE : READ;
    }
}
