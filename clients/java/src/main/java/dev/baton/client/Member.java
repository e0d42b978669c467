package dev.baton.client;

import java.util.List;
import java.util.Map;

/**
 * One etcd member of the cluster (the API's Member).
 *
 * @param id its etcd ID, in hex
 * @param name its name
 * @param peerUrls its peer URLs
 * @param clientUrls its etcd client URLs
 * @param isLeader whether it is the raft leader
 */
public record Member(String id, String name, List<String> peerUrls, List<String> clientUrls, boolean isLeader) {
    static Member from(Map<String, Object> m) {
        return new Member(Json.str(m, "id"), Json.str(m, "name"), Json.strings(m, "peer_urls"), Json.strings(m, "client_urls"),
                Boolean.TRUE.equals(m.get("is_leader")));
    }
}
