package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The client's records have the fields of the API: each is compared with
 * its schema in openapi/openapi.json, so a field added to the API but not
 * to the client (or the other way round) fails.
 */
class TypesTest {
    @Test
    void everyRecordHasTheFieldsOfItsSchema() throws IOException {
        Map<String, Object> schemas = Json.obj(Json.obj(Json.obj(Json.parse(Files.readString(
                Live.repo().resolve("openapi/openapi.json")))), "components"), "schemas");
        Map<String, Class<? extends Record>> pairs = Map.ofEntries(Map.entry("Lock", LockInfo.class), Map.entry("Waiter", Waiter.class),
                Map.entry("Leader", LeaderInfo.class), Map.entry("Candidate", Candidate.class), Map.entry("Hold", HoldInfo.class),
                Map.entry("Semaphore", SemaphoreInfo.class), Map.entry("RWLock", RWLockInfo.class),
                Map.entry("LockSet", LockSetInfo.class), Map.entry("Session", SessionInfo.class), Map.entry("Event", Event.class),
                Map.entry("FencedValue", FencedValue.class), Map.entry("Cluster", ClusterInfo.class), Map.entry("Member", Member.class),
                Map.entry("Key", Key.class), Map.entry("KeyList", KeyList.class), Map.entry("YieldRequested", YieldRequested.class),
                Map.entry("Whoami", Whoami.class), Map.entry("Rule", Rule.class), Map.entry("Quotas", Quotas.class),
                Map.entry("QuotaUsage", QuotaUsage.class));
        for (Map.Entry<String, Class<? extends Record>> p : pairs.entrySet()) {
            TreeSet<String> want = new TreeSet<>(Json.obj(Json.obj(schemas, p.getKey()), "properties").keySet());
            TreeSet<String> have = new TreeSet<>();
            for (RecordComponent rc : p.getValue().getRecordComponents()) {
                have.add(rc.getName().replaceAll("([A-Z])", "_$1").toLowerCase());
            }
            assertEquals(want, have, p.getValue().getSimpleName() + " vs the " + p.getKey() + " schema");
        }
    }

    /**
     * Every member of the Problem schema has an accessor, camel-cased, on
     * BatonException or on the exception class of a code, but the ones read
     * through {@link BatonException#problem()}.
     */
    @Test
    void everyProblemMemberHasAnAccessor() throws IOException {
        Map<String, Object> schemas = Json.obj(Json.obj(Json.obj(Json.parse(Files.readString(
                Live.repo().resolve("openapi/openapi.json")))), "components"), "schemas");
        Set<String> throughProblem = Set.of("type", "delayed_until");
        TreeSet<String> have = new TreeSet<>();
        List<Class<?>> classes = new ArrayList<>(List.of(BatonException.class));
        for (ProblemCode pc : ProblemCode.values()) {
            classes.add(pc.exceptionClass());
        }
        for (Class<?> cls : classes) {
            for (Method m : cls.getMethods()) {
                if (m.getParameterCount() == 0 && Modifier.isPublic(m.getModifiers())) {
                    have.add(m.getName().replaceAll("([A-Z])", "_$1").toLowerCase());
                }
            }
        }
        TreeSet<String> missing = new TreeSet<>(Json.obj(Json.obj(schemas, "Problem"), "properties").keySet());
        missing.removeAll(have);
        missing.removeAll(throughProblem);
        assertEquals(new TreeSet<String>(), missing, "members of the Problem schema without an accessor");
    }
}
