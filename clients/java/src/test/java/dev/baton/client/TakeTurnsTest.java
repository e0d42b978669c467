package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * examples/TakeTurns.java, as a user runs it: two JVMs take turns on one
 * lock; the one that holds it last is revoked, and its lost future fires.
 */
@Timeout(90)
class TakeTurnsTest {
    /** One JVM of the example, its output lines queued as they come. */
    private static final class Proc implements AutoCloseable {
        final Process p;
        final LinkedBlockingQueue<String> lines = new LinkedBlockingQueue<>();
        final List<String> all = java.util.Collections.synchronizedList(new ArrayList<>());

        Proc(String... args) throws IOException {
            List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-cp",
                    System.getProperty("baton.examples"), "TakeTurns"));
            cmd.addAll(List.of(args));
            ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
            pb.environment().put("BATON_ADDR", Live.addr());
            p = pb.start();
            Thread t = new Thread(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                    for (String l; (l = r.readLine()) != null;) {
                        all.add(l);
                        lines.add(l);
                    }
                } catch (IOException e) {
                    lines.add("READ ERROR " + e);
                }
            });
            t.setDaemon(true);
            t.start();
        }

        /** until waits for a line starting with prefix, failing on timeout or the process's end. */
        String until(String prefix, Duration timeout) throws InterruptedException {
            long end = System.nanoTime() + timeout.toNanos();
            for (;;) {
                String l = lines.poll(Math.max(end - System.nanoTime(), 0), TimeUnit.NANOSECONDS);
                if (l == null) {
                    throw new AssertionError("no line " + prefix + " within " + timeout + "; output: " + all);
                }
                if (l.startsWith(prefix)) {
                    return l;
                }
            }
        }

        @Override
        public void close() {
            p.destroyForcibly();
        }
    }

    @Test
    void twoJvmsTakeTurnsAndTheRevokedOneIsToldAtOnce() throws Exception {
        String name = Live.name("take-turns");
        try (Proc a = new Proc(name, "a", "3", "--hold-last"); Proc b = new Proc(name, "b", "3"); Client admin = Live.client()) {
            String holding = a.until("HOLDING a", Duration.ofSeconds(60));
            long token = Long.parseLong(holding.substring(holding.lastIndexOf(' ') + 1));
            assertEquals(token, admin.getLock(name).token(), "a holds the lock");
            admin.revoke(name, "operator");
            String lost = a.until("LOST a", Duration.ofSeconds(2));
            assertTrue(lost.contains("revoked") && lost.contains("operator"), lost);
            a.until("DONE a", Duration.ofSeconds(10));
            b.until("DONE b", Duration.ofSeconds(30));
            assertTrue(a.p.waitFor(10, TimeUnit.SECONDS) && b.p.waitFor(10, TimeUnit.SECONDS));
            assertEquals(0, a.p.exitValue(), "a: " + a.all);
            assertEquals(0, b.p.exitValue(), "b: " + b.all);

            // Six turns, three each, each with a token of its own.
            Set<Long> tokens = new HashSet<>();
            for (Proc p : List.of(a, b)) {
                long turns = p.all.stream().filter(l -> l.startsWith("TURN ")).peek(l -> tokens.add(
                        Long.parseLong(l.substring(l.lastIndexOf(' ') + 1)))).count();
                assertEquals(3, turns, p.all.toString());
            }
            assertEquals(6, tokens.size(), "every turn its own token: " + a.all + " " + b.all);
        }
    }
}
