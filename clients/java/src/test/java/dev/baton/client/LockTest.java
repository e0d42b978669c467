package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Locks, lock sets, sessions and fenced writes against the live node. */
@Timeout(60)
class LockTest {
    private Client c;
    private Client other;

    @BeforeEach
    void clients() {
        c = Live.client();
        other = Live.client();
    }

    @AfterEach
    void close() {
        c.close();
        other.close();
    }

    @Test
    void aReleaseInsideTheAtLeastWindowKeepsTheLockUntilItsEnd() {
        String name = Live.name("minhold");
        Lock lk = c.acquire(name, AcquireOptions.defaults().minHold(Duration.ofSeconds(60)));
        assertEquals(Duration.ofSeconds(60), lk.info().minHold());
        lk.release();
        HeldException e = assertThrows(HeldException.class, () -> other.acquire(name, AcquireOptions.defaults()));
        assertEquals("lock_held", e.code());
        Duration after = e.retryAfter().orElseThrow();
        assertTrue(!after.isNegative() && !after.isZero() && after.compareTo(Duration.ofSeconds(60)) <= 0, "retry after " + after);
        NotHeldException free = assertThrows(NotHeldException.class, () -> c.getLock(name));
        assertEquals(lk.info().acquiredAt().plus(Duration.ofSeconds(60)).toString(), free.problem().get("delayed_until"));
    }

    @Test
    void acquireHeldRelease() {
        String name = Live.name("lock");
        Lock lk = c.acquire(name, AcquireOptions.defaults().owner("first").ttl(Duration.ofSeconds(10)).metadata(Map.of("k", "v")));
        assertTrue(lk.token() > 0);
        assertEquals(name, lk.name());
        assertEquals("first", lk.info().owner());
        assertEquals(Duration.ofSeconds(10), lk.info().ttl());

        HeldException e = assertThrows(HeldException.class, () -> other.acquire(name, AcquireOptions.defaults().owner("second")));
        assertEquals(409, e.status());
        assertEquals("lock_held", e.code());
        LockInfo holder = e.holder().orElseThrow();
        assertEquals("first", holder.owner());
        assertEquals(lk.token(), holder.token());
        assertEquals(Map.of("k", "v"), holder.metadata());
        assertTrue(e.getMessage().contains("acquire \"" + name + "\""), e.getMessage());

        assertEquals(lk.token(), c.getLock(name).token());
        lk.release();
        assertThrows(NotHeldException.class, () -> c.getLock(name));
        try (Lock next = other.acquire(name, AcquireOptions.defaults().owner("second"))) {
            assertTrue(next.token() > lk.token(), "tokens only grow");
        }
        assertFalse(lk.isLost());
    }

    @Test
    void aHoldIsNeverReleasedTwice() {
        String name = Live.name("twice");
        Lock first = c.acquire(name);
        first.release();
        try (Lock second = other.acquire(name)) {
            first.release(); // nothing: the first hold is over
            first.close();
            assertEquals(second.token(), c.getLock(name).token(), "the second holder keeps the lock");
            long releases = c.history(EventsOptions.lock(name), 100, 0).events().stream()
                    .filter(e -> e.type().equals("released")).count();
            assertEquals(1, releases, "one release event, the first hold's");
        }
    }

    @Test
    void aWaitingAcquireIsGrantedWhenTheHolderReleases() throws Exception {
        String name = Live.name("wait");
        Lock lk = c.acquire(name);
        CompletableFuture<Lock> waiter = CompletableFuture.supplyAsync(
                () -> other.acquire(name, AcquireOptions.defaults().waitFor(Duration.ofSeconds(20))));
        Live.waitFor(() -> c.getLock(name).waiters().size() == 1, Duration.ofSeconds(10), "the second client in line");
        assertFalse(waiter.isDone());
        lk.release();
        try (Lock next = waiter.get(10, TimeUnit.SECONDS)) {
            assertTrue(next.token() > lk.token());
        }
    }

    /** lost completes within 100 ms of a revoke; run three times over. */
    @RepeatedTest(3)
    void lostWithin100msOfARevoke() throws Exception {
        String name = Live.name("revoke");
        Lock lk = c.acquire(name, AcquireOptions.defaults().ttl(Duration.ofSeconds(30)));
        CompletableFuture<LockLostException> lost = lk.lost();
        // The client's one event stream is up: from here a revoke is pushed.
        Live.waitFor(c::watching, Duration.ofSeconds(10), "the client's event stream");
        other.revoke(name, "maintenance");
        long revoked = System.nanoTime();
        LockLostException why = lost.get(100, TimeUnit.MILLISECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - revoked);
        assertTrue(ms <= 100, "lost " + ms + " ms after the revoke");
        assertTrue(lk.isLost());
        assertEquals(lk.token(), why.token());
        assertEquals("revoked", why.event().orElseThrow().type());
        assertTrue(why.getMessage().contains("revoked at revision") && why.getMessage().contains("maintenance"), why.getMessage());
        LockLostException onRelease = assertThrows(LockLostException.class, lk::release);
        assertEquals(why, onRelease);
        assertThrows(LockLostException.class, lk::release, "the same outcome again");
    }

    @Test
    void aLockSetIsAllOrNothingWithOneToken() throws Exception {
        String a = Live.name("acct");
        String b = Live.name("acct");
        String x = Live.name("acct");
        LockSet set = c.acquireSet(List.of(a, b), AcquireOptions.defaults().ttl(Duration.ofSeconds(10)));
        assertEquals(List.of(a, b), set.names());
        assertEquals(set.token(), c.getLock(a).token());
        assertEquals(set.token(), c.getLock(b).token());
        assertEquals(List.of(a, b), c.getLock(a).set());

        assertThrows(HeldException.class, () -> other.acquire(a));
        HeldException e = assertThrows(HeldException.class, () -> other.acquireSet(List.of(x, b), AcquireOptions.defaults()));
        assertEquals(List.of(b), e.holders().stream().map(HoldInfo::name).toList(), "the lock in the way");
        assertThrows(NotHeldException.class, () -> c.getLock(x), "nothing of the refused set was taken");
        assertEquals(set.token(), set.renew().token());

        Live.waitFor(c::watching, Duration.ofSeconds(10), "the client's event stream");
        other.revoke(b, "one of two");
        LockLostException why = set.lost().get(1, TimeUnit.SECONDS);
        assertTrue(why.getMessage().contains("lock \"" + b + "\" revoked"), why.getMessage());
        assertThrows(LockLostException.class, set::release);
        assertThrows(NotHeldException.class, () -> c.getLock(a), "the release gave back the lock still held");
    }

    @Test
    void aStaleFencedWriteIsRefused() throws Exception {
        String name = Live.name("fence");
        String res = Live.name("ledger");
        Lock old = c.acquire(name);
        assertEquals(old.token(), c.putFenced(res, old.token(), Map.of("balance", 1), FenceOptions.lock(name)).token());
        other.revoke(name, "stalled");
        old.lost().get(5, TimeUnit.SECONDS);
        try (Lock now = other.acquire(name)) {
            other.putFenced(res, now.token(), Map.of("balance", 2), FenceOptions.lock(name));
            // The stalled holder wakes up and writes with its old token.
            StaleTokenException e = assertThrows(StaleTokenException.class,
                    () -> c.putFenced(res, old.token(), Map.of("balance", 3)));
            assertEquals(now.token(), e.maxToken().orElseThrow());
            assertThrows(NotHolderException.class, () -> c.putFenced(res, now.token() + 1, 4, FenceOptions.lock(name)));
            FencedValue v = c.getFenced(res);
            assertEquals(Map.of("balance", 2L), v.value());
            assertEquals(now.token(), v.token());
        }
        assertThrows(UnknownTokenException.class, () -> c.putFenced(res, Long.MAX_VALUE / 2, 5));
        assertThrows(NotFoundException.class, () -> c.getFenced(Live.name("nothing")));
    }

    @Test
    void aSessionsLocksEndWithIt() throws Exception {
        SessionInfo s = c.createSession(Duration.ofSeconds(10), "worker-1");
        String a = Live.name("shard");
        String b = Live.name("shard");
        Lock la = c.acquire(a, AcquireOptions.defaults().session(s.id()));
        Lock lb = c.acquire(b, AcquireOptions.defaults().session(s.id()));
        // In a session an acquire is idempotent: the same lock again (200).
        Lock again = c.acquire(a, AcquireOptions.defaults().session(s.id()));
        assertEquals(la.token(), again.token());
        assertEquals(List.of(a, b).stream().sorted().toList(), c.session(s.id()).locks().stream().sorted().toList());
        Live.waitFor(c::watching, Duration.ofSeconds(10), "the client's event stream");
        c.deleteSession(s.id());
        assertNotNull(la.lost().get(1, TimeUnit.SECONDS));
        assertNotNull(lb.lost().get(1, TimeUnit.SECONDS));
        assertNotNull(again.lost().get(1, TimeUnit.SECONDS));
        assertThrows(SessionNotFoundException.class, () -> c.session(s.id()));
    }

    @Test
    void batonLockIsAJavaUtilConcurrentLock() throws Exception {
        String name = Live.name("juc");
        java.util.concurrent.locks.Lock a = c.newLock(name, AcquireOptions.defaults().ttl(Duration.ofSeconds(10)));
        BatonLock b = other.newLock(name, AcquireOptions.defaults().ttl(Duration.ofSeconds(10)));
        a.lock();
        a.lock(); // re-entrant, as InterProcessMutex
        long token = ((BatonLock) a).token();
        assertFalse(b.tryLock(), "held by the other client");
        // b is locked and unlocked on a thread of its own, as a Lock must be.
        ExecutorService bt = Executors.newSingleThreadExecutor();
        Future<Boolean> got = bt.submit(() -> b.tryLock(20, TimeUnit.SECONDS));
        Live.waitFor(() -> c.getLock(name).waiters().size() == 1, Duration.ofSeconds(10), "b in line");
        a.unlock();
        assertEquals(token, c.getLock(name).token(), "held until unlocked as often as locked");
        AtomicBoolean wrongThread = new AtomicBoolean();
        Thread t = new Thread(() -> {
            try {
                a.unlock();
            } catch (IllegalMonitorStateException e) {
                wrongThread.set(true);
            }
        });
        t.start();
        t.join();
        assertTrue(wrongThread.get(), "another thread cannot unlock it");
        a.unlock();
        assertThrows(IllegalMonitorStateException.class, a::unlock);
        assertTrue(got.get(10, TimeUnit.SECONDS), "b got it when a unlocked");
        assertTrue(b.current().token() > token);
        assertThrows(UnsupportedOperationException.class, b::newCondition);
        assertFalse(a.tryLock(50, TimeUnit.MILLISECONDS), "b holds it");
        // b's lock is revoked: lost fires, and unlock says so after giving it back.
        CompletableFuture<LockLostException> lost = b.lost();
        Live.waitFor(other::watching, Duration.ofSeconds(10), "b's event stream");
        c.revoke(name, "operator");
        lost.get(1, TimeUnit.SECONDS);
        ExecutionException unlocked = assertThrows(ExecutionException.class, () -> bt.submit(b::unlock).get(10, TimeUnit.SECONDS));
        assertInstanceOf(LockLostException.class, unlocked.getCause());
        assertFalse(bt.submit(b::isHeldByCurrentThread).get(10, TimeUnit.SECONDS));
        bt.shutdown();
        assertTrue(a.tryLock(), "free again");
        a.unlock();
    }
}
