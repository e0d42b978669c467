package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Semaphores and read/write locks against the live node. */
@Timeout(60)
class SemaphoreTest {
    @Test
    void aSemaphoreOfTwoServesThreeWorkersTwoAtATime() throws Exception {
        String name = Live.name("jobs");
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        ConcurrentLinkedQueue<Long> tokens = new ConcurrentLinkedQueue<>();
        CountDownLatch finish = new CountDownLatch(1);
        List<Client> clients = new ArrayList<>();
        List<CompletableFuture<Void>> workers = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                Client w = Live.client();
                clients.add(w);
                String owner = "worker-" + i;
                workers.add(CompletableFuture.runAsync(() -> {
                    try (Permit p = w.acquirePermit(name, 2, AcquireOptions.defaults().owner(owner).waitFor(Duration.ofSeconds(30)))) {
                        assertEquals(2, p.limit());
                        tokens.add(p.token());
                        int n = inside.incrementAndGet();
                        most.accumulateAndGet(n, Math::max);
                        // Hold the permit until the test lets the first two go.
                        finish.await(20, TimeUnit.SECONDS);
                        inside.decrementAndGet();
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                }));
            }
            Client c = clients.get(0);
            Live.waitFor(() -> tokens.size() == 2, Duration.ofSeconds(10), "two permits granted");
            Live.waitFor(() -> c.semaphore(name).waiters().size() == 1, Duration.ofSeconds(10), "the third worker in line");
            SemaphoreInfo s = c.semaphore(name);
            assertEquals(2, s.limit());
            assertEquals(2, s.holders().size());

            SemaphoreFullException full = assertThrows(SemaphoreFullException.class,
                    () -> c.acquirePermit(name, 2, AcquireOptions.defaults()));
            assertEquals(2, full.holders().size());
            LimitMismatchException mismatch = assertThrows(LimitMismatchException.class,
                    () -> c.acquirePermit(name, 3, AcquireOptions.defaults()));
            assertEquals(2, mismatch.limit().orElseThrow());

            finish.countDown();
            for (CompletableFuture<Void> w : workers) {
                w.get(20, TimeUnit.SECONDS);
            }
            assertEquals(2, most.get(), "never more than two at once");
            Set<Long> distinct = new HashSet<>(tokens);
            assertEquals(3, distinct.size(), "every permit has a token of its own");
            assertThrows(NotHeldException.class, () -> c.semaphore(name), "every permit given back");
        } finally {
            clients.forEach(Client::close);
        }
    }

    @Test
    void readersShareAndAWriterWaitsForThem() throws Exception {
        String name = Live.name("catalog");
        try (Client c = Live.client(); Client w = Live.client()) {
            RWHold r1 = c.acquireRW(name, RWMode.READ, AcquireOptions.defaults());
            RWHold r2 = c.acquireRW(name, RWMode.READ, AcquireOptions.defaults());
            assertEquals(RWMode.READ, r1.mode());
            HeldException held = assertThrows(HeldException.class, () -> w.acquireRW(name, RWMode.WRITE, AcquireOptions.defaults()));
            assertEquals(2, held.holders().size());
            CompletableFuture<RWHold> writer = CompletableFuture.supplyAsync(
                    () -> w.acquireRW(name, RWMode.WRITE, AcquireOptions.defaults().waitFor(Duration.ofSeconds(20))));
            Live.waitFor(() -> c.rwlock(name).waiters().size() == 1, Duration.ofSeconds(10), "the writer in line");
            r1.release();
            assertFalse(writer.isDone());
            r2.release();
            try (RWHold wr = writer.get(10, TimeUnit.SECONDS)) {
                assertEquals(RWMode.WRITE, wr.mode());
                assertTrue(wr.token() > r2.token());
                w.putFenced(Live.name("catalog"), wr.token(), "v1", FenceOptions.rwlock(name));
            }
        }
    }
}
