package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Keys against the live node: compare-and-set, session-bound keys, fenced
 * writes, paged listings, blocking reads, a watch that resumes after a cut
 * and refused stream without a gap or a repeat, and which writes are
 * repeated after a 503.
 */
@Timeout(60)
class KeysTest {
    private static Client through(String endpoint) {
        return Client.builder().endpoints(endpoint).retryBackoff(Duration.ofMillis(10)).timeout(Duration.ofSeconds(5)).build();
    }

    @Test
    void compareAndSetCreateOnlyPagingAndDelete() {
        try (Client c = Live.client()) {
            String dir = Live.name("cfg");
            String key = dir + "/db";
            KeyNotFoundException missing = assertThrows(KeyNotFoundException.class, () -> c.getKey(key));
            assertTrue(missing.revision().orElseThrow() > 0, "a missing key's error says the revision it was read at");

            Key a = c.putKey(key, Map.of("host", "a"), PutKeyOptions.defaults().ifRevision(0));
            assertEquals(List.of(key, Map.of("host", "a"), 1L, a.revision()), List.of(a.key(), a.value(), a.version(), a.createdRevision()));
            RevisionMismatchException again = assertThrows(RevisionMismatchException.class,
                    () -> c.putKey(key, "x", PutKeyOptions.defaults().ifRevision(0)));
            assertEquals(a.revision(), again.revision().orElseThrow(), "a second create names the key's revision");
            RevisionMismatchException absent = assertThrows(RevisionMismatchException.class,
                    () -> c.putKey(dir + "/absent", "x", PutKeyOptions.defaults().ifRevision(a.revision())));
            assertEquals(0, absent.revision().orElseThrow(), "0: the key does not exist");

            Key b = c.putKey(key, Map.of("host", "b"), PutKeyOptions.defaults().ifRevision(a.revision()));
            assertEquals(2, b.version());
            assertEquals(a.revision(), b.createdRevision());
            Key got = c.getKey(key);
            assertEquals(Map.of("host", "b"), got.value());
            assertEquals(b.revision(), got.revision());
            assertNull(got.session());

            for (int i = 0; i < 3; i++) {
                c.putKey(dir + "/n" + i, i);
            }
            List<String> listed = new ArrayList<>();
            int pages = 0;
            for (String cursor = null;;) {
                KeyList page = c.listKeys(dir + "/", 2, cursor);
                pages++;
                assertTrue(page.keys().size() <= 2);
                assertTrue(page.revision() >= b.revision(), "a page is read after the puts before it");
                page.keys().forEach(k -> listed.add(k.key().substring(dir.length() + 1) + "=" + Json.write(k.value())));
                cursor = page.nextCursor();
                if (cursor.isEmpty()) {
                    break;
                }
            }
            assertEquals(List.of("db={\"host\":\"b\"}", "n0=0", "n1=1", "n2=2"), listed);
            assertEquals(2, pages);

            assertThrows(RevisionMismatchException.class, () -> c.deleteKey(key, DeleteKeyOptions.defaults().ifRevision(a.revision())));
            c.deleteKey(key, DeleteKeyOptions.defaults().ifRevision(b.revision()));
            assertThrows(KeyNotFoundException.class, () -> c.deleteKey(key));
        }
    }

    @Test
    void aFencedPutIsRefusedOnceTheLockChangedHands() {
        try (Client c = Live.client()) {
            String name = Live.name("lock");
            String key = Live.name("k");
            Lock old = c.acquire(name);
            c.putKey(key, 10, PutKeyOptions.defaults().fence(Fence.lock(name, old.token())));
            old.release();
            try (Lock lk = c.acquire(name)) {
                PutKeyOptions stale = PutKeyOptions.defaults().fence(Fence.lock(name, old.token()));
                assertThrows(StaleTokenException.class, () -> c.putKey(key, 9, stale));
                assertThrows(StaleTokenException.class, () -> c.deleteKey(key, DeleteKeyOptions.defaults().fence(Fence.lock(name, old.token()))));
                assertEquals(10L, c.getKey(key).value(), "the stale holder wrote nothing");
                assertEquals(11L, c.putKey(key, 11, PutKeyOptions.defaults().fence(Fence.lock(name, lk.token()))).value());
                c.deleteKey(key, DeleteKeyOptions.defaults().fence(Fence.lock(name, lk.token())));
            }
            assertThrows(IllegalArgumentException.class, () -> new Fence("mutex", name, 1));
        }
    }

    @Test
    void aSessionBoundKeyGoesWithItsSession() {
        try (Client c = Live.client()) {
            SessionInfo s = c.createSession(Duration.ofSeconds(10), Live.name("member"));
            String member = Live.name("members") + "/m1";
            assertEquals(s.id(), c.putKey(member, "10.0.0.1:80", PutKeyOptions.defaults().session(s.id())).session());
            c.deleteSession(s.id());
            assertThrows(KeyNotFoundException.class, () -> c.getKey(member));
            assertThrows(SessionNotFoundException.class, () -> c.putKey(member, "10.0.0.1:80", PutKeyOptions.defaults().session(s.id())));
        }
    }

    @Test
    void aBlockingReadReturnsAtTheNextPutOrWithTheKeyWhenItsWaitRunsOut() throws Exception {
        try (Client c = Live.client()) {
            String key = Live.name("k");
            long missing = assertThrows(KeyNotFoundException.class, () -> c.getKey(key)).revision().orElseThrow();
            CompletableFuture<Key> waiting = CompletableFuture.supplyAsync(() -> c.waitKey(key, missing, Duration.ofSeconds(30)));
            Key put = c.putKey(key, "up");
            Key k = waiting.get(20, TimeUnit.SECONDS);
            assertEquals(put.revision(), k.revision());
            assertEquals("up", k.value());
            assertEquals(put.revision(), c.waitKey(key, put.revision(), Duration.ofMillis(200)).revision());
        }
    }

    @Test
    void aWatchSeesEveryChangeOnceAcrossACutAndRefusedStream() throws Exception {
        String dir = Live.name("w");
        try (Front f = new Front(); Client c = Live.client(); Client wc = through(f.url)) {
            c.putKey(dir + "/before", 0);
            KeyList page = c.listKeys(dir + "/", 0, null);
            assertEquals(List.of(dir + "/before"), page.keys().stream().map(Key::key).toList());
            try (EventStream<KeyEvent> s = wc.watchKeys(dir + "/", page.revision())) {
                long[] last = {page.revision()};
                Expect expect = (type, key, value) -> {
                    KeyEvent ev = s.poll(Duration.ofSeconds(20)).orElseThrow(() -> new AssertionError("no " + type + " of " + key + " within 20 s"));
                    assertEquals(List.of(type, dir + "/" + key), List.of(ev.type(), ev.key()), ev.toString());
                    assertEquals(value, ev.value(), ev.toString());
                    assertTrue(ev.revision() > last[0], ev + " after " + last[0]);
                    last[0] = ev.revision();
                };
                c.putKey(dir + "/a", 1);
                expect.next("put", "a", 1L);

                // Cut the stream, and keep it away while keys change.
                f.refuse = r -> r.startsWith("GET /v1/kv/events");
                f.cut();
                c.putKey(dir + "/b", 2);
                c.putKey(dir + "/a", 3);
                c.deleteKey(dir + "/b");
                Live.waitFor(() -> f.count("GET /v1/kv/events") >= 2, Duration.ofSeconds(10), "the watch refused");
                f.refuse = r -> false;
                expect.next("put", "b", 2L);
                expect.next("put", "a", 3L);
                expect.next("delete", "b", null);
                c.putKey(dir + "/c", Map.of("x", true));
                expect.next("put", "c", Map.of("x", true));
                assertTrue(s.poll(Duration.ofMillis(100)).isEmpty(), "no change twice");
            }
            assertTrue(f.count("GET /v1/kv/events") >= 3, "connected, refused, connected again: " + f.seen);
        }
    }

    /** What the watch test expects next. */
    private interface Expect {
        void next(String type, String key, Object value);
    }

    @Test
    void aWatchFromZeroStartsFromNow() throws Exception {
        try (Client c = Live.client()) {
            String dir = Live.name("now");
            c.putKey(dir + "/old", 1);
            try (EventStream<KeyEvent> s = c.watchKeys(dir + "/", 0)) {
                s.ready().get(10, TimeUnit.SECONDS);
                Key k = c.putKey(dir + "/new", 2);
                KeyEvent ev = s.poll(Duration.ofSeconds(20)).orElseThrow(() -> new AssertionError("no event within 20 s"));
                assertEquals(List.of("put", dir + "/new", k.revision(), 1L), List.of(ev.type(), ev.key(), ev.revision(), ev.version()));
            }
        }
    }

    @Test
    void anUnconditionalPutIsNotRepeatedAfterA503AndAConditionalPutAndDeleteAre() throws Exception {
        try (Front f = new Front(); Client c = through(f.url); Client direct = Live.client()) {
            String key = Live.name("k");
            int[] n = {0};
            f.refuse = r -> r.startsWith("PUT /v1/kv/") && n[0]++ < 1;
            UnavailableException e = assertThrows(UnavailableException.class, () -> c.putKey(key, 1));
            assertTrue(e.outcomeUnknown(), e.getMessage());
            assertEquals(1, f.count("PUT /v1/kv/"), "sent once");

            n[0] = 0;
            Key k = c.putKey(key, 1, PutKeyOptions.defaults().ifRevision(0));
            assertEquals(1, k.version());
            assertEquals(3, f.count("PUT /v1/kv/"), "the conditional put, twice");
            f.refuse = r -> r.startsWith("DELETE /v1/kv/") && n[0]++ < 1;
            n[0] = 0;
            c.deleteKey(key, DeleteKeyOptions.defaults().ifRevision(k.revision()));
            assertEquals(2, f.count("DELETE /v1/kv/"));
            assertThrows(KeyNotFoundException.class, () -> direct.getKey(key));
        }
    }
}
