package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Waits longer than one request, against the live node through a front
 * that counts the requests: a client whose requests wait 200 ms at most
 * keeps its session's place in line over many of them, past the session's
 * TTL, ahead of a later waiter; a long wait without a session is refused
 * before any request; an interrupted wait gives its place up.
 */
@Timeout(90)
class LongWaitTest {
    private static final Duration MAX = Duration.ofMillis(200);
    private static final Duration TTL = Duration.ofSeconds(2);

    private Front f;
    private Client c;
    private Client plain;
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @BeforeEach
    void clients() throws Exception {
        f = new Front();
        c = Client.builder().endpoints(f.url).maxRequestWait(MAX).timeout(Duration.ofSeconds(5)).retryBackoff(Duration.ofMillis(20))
                .build();
        plain = Live.client();
    }

    @AfterEach
    void close() {
        pool.shutdownNow();
        c.close();
        plain.close();
        f.close();
    }

    private <T> CompletableFuture<T> async(Supplier<T> s) {
        return CompletableFuture.supplyAsync(s, pool);
    }

    private List<String> lockWaiters(String name) {
        try {
            return plain.getLock(name).waiters().stream().map(Waiter::owner).collect(Collectors.toList());
        } catch (NotHeldException e) {
            return List.of();
        }
    }

    /**
     * Polls until the run of requests to path counts at least n, and the
     * session has outlived its TTL; fails at once if the wait ended.
     */
    private void manyRequests(String path, int n, long since, CompletableFuture<?> wait) {
        Live.waitFor(() -> {
            if (wait.isDone()) {
                throw new AssertionError("the long wait ended: " + wait);
            }
            return f.count(path) >= n && System.nanoTime() - since > TTL.toNanos() + 1_000_000_000L;
        }, Duration.ofSeconds(40), n + " requests of the long wait, past the session's TTL");
    }

    @Test
    void aLongWaitKeepsItsPlaceInLineAcrossRequests() throws Exception {
        String name = Live.name("long");
        String path = "POST /v1/locks/" + name;
        Lock holder = plain.acquire(name, AcquireOptions.defaults().owner("holder").ttl(Duration.ofSeconds(10)));

        InvalidRequestException bad = assertThrows(InvalidRequestException.class,
                () -> c.acquire(name, AcquireOptions.defaults().owner("w").waitFor(Duration.ofSeconds(1))));
        assertEquals("wait", bad.field());
        assertTrue(bad.getMessage().contains("needs a session"), bad.getMessage());
        assertEquals(0, f.count(path), "refused before any request");

        SessionInfo s = c.createSession(TTL, "early");
        long since = System.nanoTime();
        CompletableFuture<Lock> early = async(
                () -> c.acquire(name, AcquireOptions.defaults().owner("early").session(s.id()).waitFor(Client.WAIT_FOREVER)));
        Live.waitFor(() -> lockWaiters(name).equals(List.of("early")), Duration.ofSeconds(10), "early in line");
        CompletableFuture<Lock> late = async(() -> plain.acquire(name,
                AcquireOptions.defaults().owner("late").ttl(Duration.ofSeconds(10)).waitFor(Duration.ofSeconds(60))));
        Live.waitFor(() -> lockWaiters(name).size() == 2, Duration.ofSeconds(10), "late in line");

        // Past the session's TTL, over a score of requests: the place held.
        manyRequests(path, 20, since, early);
        assertEquals(List.of("early", "late"), lockWaiters(name), "early's place first, then late");

        holder.release();
        Lock got = early.get(20, TimeUnit.SECONDS);
        assertTrue(got.token() > holder.token());
        assertEquals(s.id(), got.info().session());
        assertFalse(late.isDone(), "the later waiter stays behind");
        got.release();
        late.get(20, TimeUnit.SECONDS).release();
        c.deleteSession(s.id());
    }

    @Test
    void aCampaignWaitsTheSameWay() throws Exception {
        String name = Live.name("long-election");
        String path = "POST /v1/elections/" + name + "/campaign";
        Leadership leader = plain.campaign(name, CampaignOptions.defaults().candidate("leader").ttl(Duration.ofSeconds(10)));

        assertThrows(InvalidRequestException.class,
                () -> c.campaign(name, CampaignOptions.defaults().candidate("w").waitFor(Duration.ofSeconds(1))));
        assertEquals(0, f.count(path), "refused before any request");

        SessionInfo s = c.createSession(TTL, "early");
        long since = System.nanoTime();
        Supplier<List<String>> line = () -> plain.leader(name).candidates().stream().map(Candidate::candidate).collect(Collectors.toList());
        CompletableFuture<Leadership> early = async(
                () -> c.campaign(name, CampaignOptions.defaults().candidate("early").session(s.id()).waitFor(Client.WAIT_FOREVER)));
        Live.waitFor(() -> line.get().equals(List.of("early")), Duration.ofSeconds(10), "early in line");
        CompletableFuture<Leadership> late = async(() -> plain.campaign(name,
                CampaignOptions.defaults().candidate("late").ttl(Duration.ofSeconds(10)).waitFor(Duration.ofSeconds(60))));
        Live.waitFor(() -> line.get().size() == 2, Duration.ofSeconds(10), "late in line");

        manyRequests(path, 20, since, early);
        assertEquals(List.of("early", "late"), line.get(), "early's place first, then late");

        leader.resign();
        Leadership won = early.get(20, TimeUnit.SECONDS);
        assertEquals(2, won.term());
        assertEquals(s.id(), won.info().session());
        assertFalse(late.isDone(), "the later candidate stays behind");
        won.resign();
        Leadership next = late.get(20, TimeUnit.SECONDS);
        assertEquals("late", next.info().candidate());
        next.resign();
        c.deleteSession(s.id());
    }

    @Test
    void permitsAndReadWriteHoldsWaitTheSameWay() throws Exception {
        SessionInfo s = c.createSession(TTL, "long");
        AcquireOptions inSession = AcquireOptions.defaults().owner("long").session(s.id()).waitFor(Client.WAIT_FOREVER);

        String sem = Live.name("long-sem");
        Permit first = plain.acquirePermit(sem, 1, AcquireOptions.defaults().ttl(Duration.ofSeconds(10)));
        CompletableFuture<Permit> permit = async(() -> c.acquirePermit(sem, 1, inSession));
        Live.waitFor(() -> f.count("POST /v1/semaphores/" + sem) >= 8, Duration.ofSeconds(30), "8 requests for the permit");
        assertEquals(1, plain.semaphore(sem).waiters().size());
        first.release();
        Permit p = permit.get(20, TimeUnit.SECONDS);
        assertEquals(s.id(), p.info().session());
        p.release();

        String rw = Live.name("long-rw");
        RWHold writer = plain.acquireRW(rw, RWMode.WRITE, AcquireOptions.defaults().ttl(Duration.ofSeconds(10)));
        CompletableFuture<RWHold> reader = async(() -> c.acquireRW(rw, RWMode.READ, inSession));
        Live.waitFor(() -> f.count("POST /v1/rwlocks/" + rw) >= 8, Duration.ofSeconds(30), "8 requests for the read hold");
        assertEquals(1, plain.rwlock(rw).waiters().size());
        writer.release();
        RWHold r = reader.get(20, TimeUnit.SECONDS);
        assertEquals(RWMode.READ, r.mode());
        r.release();
        c.deleteSession(s.id());
    }

    @Test
    void aLongWaitThatRunsOutEndsItsPlace() {
        String name = Live.name("long-out");
        try (Lock holder = plain.acquire(name, AcquireOptions.defaults().ttl(Duration.ofSeconds(10)))) {
            SessionInfo s = c.createSession(TTL, "gives-up");
            HeldException e = assertThrows(HeldException.class,
                    () -> c.acquire(name, AcquireOptions.defaults().session(s.id()).waitFor(Duration.ofSeconds(1))));
            assertFalse(e.placeKept(), "the last request keeps no place");
            assertEquals(holder.token(), e.holder().orElseThrow().token());
            assertTrue(f.count("POST /v1/locks/" + name) >= 4, "a wait of 1 s in requests of 200 ms");
            assertEquals(List.of(), lockWaiters(name), "no place left in line");
            c.deleteSession(s.id());
        }
    }

    @Test
    void anInterruptedWaitGivesItsPlaceUp() throws Exception {
        String name = Live.name("long-interrupt");
        String path = "POST /v1/locks/" + name;
        try (Lock holder = plain.acquire(name, AcquireOptions.defaults().ttl(Duration.ofSeconds(10)))) {
            SessionInfo s = c.createSession(Duration.ofSeconds(10), "interrupted");
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            AtomicReference<Boolean> flag = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    c.acquire(name, AcquireOptions.defaults().owner("interrupted").session(s.id()).waitFor(Client.WAIT_FOREVER));
                } catch (Throwable e) {
                    thrown.set(e);
                    flag.set(Thread.currentThread().isInterrupted());
                }
            });
            t.start();
            Live.waitFor(() -> f.count(path) >= 3 && lockWaiters(name).equals(List.of("interrupted")), Duration.ofSeconds(20),
                    "a few requests of the long wait");
            t.interrupt();
            t.join(TimeUnit.SECONDS.toMillis(20));
            assertFalse(t.isAlive(), "the wait ended");
            assertInstanceOf(java.util.concurrent.CancellationException.class, thrown.get());
            assertEquals(Boolean.TRUE, flag.get(), "the interrupt flag stays set");
            Live.waitFor(() -> lockWaiters(name).isEmpty(), Duration.ofSeconds(5), "the place given up");
            assertEquals(List.of(), c.session(s.id()).locks(), "nothing held in the session");
            assertEquals(holder.token(), plain.getLock(name).token());
            c.deleteSession(s.id());
        }
    }

    @Test
    void aBatonLockWaitsInRoundsOfTheMaximumWithoutASession() throws Exception {
        String name = Live.name("long-batonlock");
        try (Lock holder = plain.acquire(name, AcquireOptions.defaults().ttl(Duration.ofSeconds(10)))) {
            BatonLock m = c.newLock(name, AcquireOptions.defaults().waitFor(Duration.ofSeconds(30)));
            assertFalse(m.tryLock(1, TimeUnit.SECONDS), "held all along");
            assertTrue(f.count("POST /v1/locks/" + name) >= 4, "rounds of 200 ms");
            assertTrue(holder.token() > 0);
        }
    }

    @Test
    void placeKeptIsReadFromTheProblem() {
        BatonException kept = ProblemCode.decode(409, "{\"code\":\"lock_held\",\"title\":\"Lock held\",\"status\":409,\"place_kept\":true}",
                true, null, "acquire \"x\"");
        assertInstanceOf(HeldException.class, kept);
        assertTrue(kept.placeKept());
        assertFalse(ProblemCode.decode(409, "{\"code\":\"lock_held\",\"status\":409}", true, null, "").placeKept());
        assertThrows(IllegalArgumentException.class, () -> Client.builder().maxRequestWait(Duration.ofMinutes(6)).build());
        assertEquals(Client.MAX_REQUEST_WAIT, plain.maxRequestWait());
    }
}
