package dev.baton.client;

import java.util.List;
import java.util.Map;

/**
 * The cluster as a node sees it (the API's Cluster).
 *
 * @param leader the etcd leader's member name
 * @param members every member
 * @param raftTerm the raft term
 * @param revision the etcd revision now
 */
public record ClusterInfo(String leader, List<Member> members, long raftTerm, long revision) {
    static ClusterInfo from(Map<String, Object> m) {
        return new ClusterInfo(Json.str(m, "leader"), Wire.records(m, "members", Member::from), Json.lng(m, "raft_term"),
                Json.lng(m, "revision"));
    }
}
