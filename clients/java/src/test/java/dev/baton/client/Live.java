package dev.baton.client;

import java.io.IOException;
import java.net.HttpURLConnection;
import java.net.ServerSocket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;

/**
 * The live baton of the tests: BATON_ADDR, the node build.sh started; and
 * nodes of a test's own from BATON_BIN (to restart one). Conditions are
 * waited for under a deadline, never with a fixed sleep.
 */
final class Live {
    private Live() {}

    /** The node build.sh started. */
    static String addr() {
        String a = System.getenv("BATON_ADDR");
        if (a == null || a.isBlank()) {
            throw new IllegalStateException("BATON_ADDR is unset: run the tests with clients/java/build.sh");
        }
        return a;
    }

    static Client client() {
        return Client.builder().endpoints(addr()).build();
    }

    /** A name of the test's own, so that tests never meet. */
    static String name(String what) {
        return what + "-" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** The repository's root, where openapi/ and problem/ are. */
    static Path repo() {
        return Path.of(System.getProperty("baton.repo", "../.."));
    }

    /** waitFor polls cond every 5 ms until it holds, failing after timeout. */
    static void waitFor(BooleanSupplier cond, Duration timeout, String what) {
        long end = System.nanoTime() + timeout.toNanos();
        while (!cond.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError(what + ": not within " + timeout.toMillis() + " ms");
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + what);
            }
        }
    }

    /** ports returns n ports the kernel handed out free. */
    static int[] ports(int n) throws IOException {
        List<ServerSocket> ss = new ArrayList<>();
        try {
            int[] out = new int[n];
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
                ss.add(s);
                out[i] = s.getLocalPort();
            }
            return out;
        } finally {
            for (ServerSocket s : ss) {
                s.close();
            }
        }
    }

    /** For build.sh: {@code Live ports N} prints N free ports. */
    public static void main(String[] args) throws IOException {
        if (args.length == 2 && args[0].equals("ports")) {
            StringBuilder sb = new StringBuilder();
            for (int p : ports(Integer.parseInt(args[1]))) {
                sb.append(sb.length() == 0 ? "" : " ").append(p);
            }
            System.out.println(sb);
            return;
        }
        System.err.println("usage: Live ports N");
        System.exit(2);
    }

    /**
     * A node of a test's own, from BATON_BIN, that it can stop and start again on the same ports and data; with an auth
     * file, when given one.
     */
    static final class Node implements AutoCloseable {
        final String addr;
        private final int httpPort;
        private final int peerPort;
        private final Path dir;
        private final Path authFile;
        private Process proc;

        Node() throws IOException {
            this(null);
        }

        /** A node run with {@code --auth-file}, of content auth (null: none). */
        Node(String auth) throws IOException {
            this(auth, "auth");
        }

        /** A node run with {@code --auth-file}, of content auth, named file: a name ending in .yaml makes it a policy file. */
        Node(String auth, String file) throws IOException {
            int[] p = ports(2);
            httpPort = p[0];
            peerPort = p[1];
            addr = "http://127.0.0.1:" + httpPort;
            dir = Files.createTempDirectory("baton-java-");
            if (auth != null) {
                authFile = dir.resolve(file);
                Files.writeString(authFile, auth);
            } else {
                authFile = null;
            }
            start();
        }

        void start() throws IOException {
            String bin = System.getenv("BATON_BIN");
            if (bin == null || bin.isBlank()) {
                throw new IllegalStateException("BATON_BIN is unset: run the tests with clients/java/build.sh");
            }
            List<String> args = new ArrayList<>(List.of(bin, "serve", "--data-dir", dir.resolve("data").toString(), "--http-addr",
                    "127.0.0.1:" + httpPort, "--peer-url", "http://127.0.0.1:" + peerPort, "--client-url", "", "--log-level", "warn"));
            if (authFile != null) {
                args.add("--auth-file");
                args.add(authFile.toString());
            }
            proc = new ProcessBuilder(args).redirectErrorStream(true).redirectOutput(dir.resolve("baton.log").toFile()).start();
            waitFor(() -> {
                if (!proc.isAlive()) {
                    throw new AssertionError("baton exited with " + proc.exitValue() + "; see " + dir.resolve("baton.log"));
                }
                return ready();
            }, Duration.ofSeconds(30), "baton's /readyz");
        }

        private boolean ready() {
            try {
                HttpURLConnection c = (HttpURLConnection) URI.create(addr + "/readyz").toURL().openConnection();
                c.setConnectTimeout(1000);
                c.setReadTimeout(1000);
                try {
                    return c.getResponseCode() == 200;
                } finally {
                    c.disconnect();
                }
            } catch (IOException e) {
                return false;
            }
        }

        /** stop ends the node as an operator would (SIGTERM), and waits for it. */
        void stop() throws InterruptedException {
            proc.destroy();
            if (!proc.waitFor(10, TimeUnit.SECONDS)) {
                proc.destroyForcibly().waitFor();
            }
        }

        @Override
        public void close() throws IOException {
            if (proc.isAlive()) {
                proc.destroyForcibly();
                try {
                    proc.waitFor(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }
}
