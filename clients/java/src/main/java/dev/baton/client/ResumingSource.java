package dev.baton.client;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * ResumingSource is the state of a stream of revisioned changes across
 * connections: where the next one resumes, and which items of the latest
 * revision were delivered, so that a reconnection delivers neither a gap
 * nor a repeat. Its kinds say where it is and how to read a message.
 *
 * @param <T> what it delivers
 */
abstract class ResumingSource<T> implements Sse.Source {
    /** A message read: the item, its revision, and what tells it from the other items of that revision. */
    record Item<T>(T item, long revision, String key) {}

    private final Client c;
    private final Consumer<T> deliver;
    private long since;
    private volatile boolean haveBase;
    // last is the revision of the latest item delivered, and seen the items
    // of that revision delivered so far: a connection may break in the
    // middle of one revision's items (a session's end is one revision), so
    // a reconnection asks for that whole revision again and skips what was
    // delivered.
    private long last;
    private Set<String> seen = new HashSet<>();
    /** Completes once the stream knows the revision it starts after. */
    final CompletableFuture<Void> based = new CompletableFuture<>();

    /** since: deliver the items after it; 0: from now on. */
    ResumingSource(Client c, long since, Consumer<T> deliver) {
        this.c = c;
        this.deliver = deliver;
        this.since = since;
        this.haveBase = since > 0;
        if (haveBase) {
            based.complete(null);
        }
    }

    /** The stream's path and query; lastId is left to the source. */
    abstract Sse.Target where();

    /** Reads one message; a throw ends the connection. */
    abstract Item<T> decode(String id, String type, String data);

    /** Without a revision to resume from a reconnection could not tell what it missed: ask a node first. */
    @Override
    public void prepare() {
        if (!haveBase) {
            since = c.cluster().revision();
            haveBase = true;
            based.complete(null);
        }
    }

    @Override
    public synchronized Sse.Target target() {
        Sse.Target w = where();
        return new Sse.Target(w.path(), w.query(), last > 0 ? last - 1 : since);
    }

    @Override
    public void dispatch(String id, String type, String data) {
        Item<T> it = decode(id, type, data);
        synchronized (this) {
            if (it.revision() < last || (it.revision() == last && seen.contains(it.key())) || (last == 0 && it.revision() <= since)) {
                return; // delivered already, or from before where we resumed
            }
        }
        deliver.accept(it.item());
        synchronized (this) {
            // Only now: an item not handed over must be asked for again.
            if (it.revision() > last) {
                last = it.revision();
                seen = new HashSet<>();
            }
            seen.add(it.key());
        }
    }

    /** revision is a message's id as a revision; 0 when it is none. */
    static long revision(String id) {
        try {
            return Long.parseLong(id);
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
