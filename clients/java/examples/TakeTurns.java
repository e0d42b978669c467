import dev.baton.client.AcquireOptions;
import dev.baton.client.BatonLock;
import dev.baton.client.Client;
import dev.baton.client.FenceOptions;
import dev.baton.client.LockLostException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Two (or more) JVMs take turns on one lock, the way a Curator user writes
 * it with InterProcessMutex: lock(), do the work, unlock(). Waiters are
 * served first come, first served, so processes that come back for the
 * lock take turns.
 *
 * <p>Each turn writes to a fenced register with the lock's token, so a
 * process that lost the lock without knowing could not overwrite a newer
 * holder's work. With --hold-last, the last turn keeps the lock until it
 * is lost (say, an operator runs {@code baton revoke NAME}), and shows how
 * the lost future fires.
 *
 * <pre>
 *   BATON_ADDR=http://127.0.0.1:8080 java -cp baton-client.jar:. TakeTurns shared-report a 3 --hold-last &amp;
 *   BATON_ADDR=http://127.0.0.1:8080 java -cp baton-client.jar:. TakeTurns shared-report b 3
 *   baton revoke shared-report
 * </pre>
 */
public final class TakeTurns {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: TakeTurns LOCK WORKER TURNS [--hold-last]");
            System.exit(2);
        }
        String name = args[0];
        String worker = args[1];
        int turns = Integer.parseInt(args[2]);
        boolean holdLast = args.length > 3 && args[3].equals("--hold-last");

        try (Client client = Client.create()) { // BATON_ADDR, or http://127.0.0.1:8080
            // As new InterProcessMutex(client, path): one per process, re-entrant per thread.
            BatonLock mutex = client.newLock(name,
                    AcquireOptions.defaults().owner(worker).ttl(Duration.ofSeconds(10)).waitFor(Duration.ofSeconds(30)));
            for (int turn = 1; turn <= turns; turn++) {
                mutex.lock(); // as mutex.acquire()
                try {
                    long token = mutex.token();
                    System.out.println("TURN " + worker + " " + turn + " token " + token);
                    // The work: fenced by the token, so a stale holder is refused.
                    client.putFenced(name + "-report", token, Map.of("worker", worker, "turn", turn), FenceOptions.lock(name));
                    if (turn == turns && holdLast) {
                        System.out.println("HOLDING " + worker + " token " + token);
                        LockLostException why = mutex.lost().get(60, TimeUnit.SECONDS);
                        System.out.println("LOST " + worker + " " + why.getMessage());
                    } else {
                        Thread.sleep(200); // the rest of the work
                    }
                } finally {
                    try {
                        mutex.unlock(); // as mutex.release()
                    } catch (LockLostException e) {
                        // Expected after a revoke: the lock was given back all the same.
                    }
                }
            }
        }
        System.out.println("DONE " + worker);
    }
}
