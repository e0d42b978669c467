package dev.baton.client;

import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/** ObserveSource is the state of an election's observation across connections. */
final class ObserveSource implements Sse.Source {
    private final String path;
    private final Consumer<LeaderChange> deliver;
    // last is the revision of the latest change delivered: a connection
    // resumes after it. 0 until the first, so that the first connection
    // that delivers anything starts with the state.
    private volatile long last;

    ObserveSource(String path, Consumer<LeaderChange> deliver) {
        this.path = path;
        this.deliver = deliver;
    }

    @Override
    public Sse.Target target() {
        return new Sse.Target(path, Map.of(), last);
    }

    @Override
    public void dispatch(String id, String type, String data) {
        long revision;
        try {
            revision = Long.parseLong(id);
        } catch (NumberFormatException e) {
            throw new UnavailableException(Problem.unavailable("", "observe: bad id " + Json.write(id), "observe", e));
        }
        Optional<LeaderInfo> leader = Optional.empty();
        if (type.equals("leader")) {
            try {
                leader = Optional.of(LeaderInfo.from(Json.obj(Json.parse(data))));
            } catch (IllegalArgumentException e) {
                throw new UnavailableException(Problem.unavailable("", "observe: bad leader", "observe", e));
            }
        } else if (!type.equals("vacant")) {
            return; // a kind of message this client does not know
        }
        if (last > 0 && revision <= last) {
            return; // delivered already
        }
        deliver.accept(new LeaderChange(revision, leader));
        last = revision;
    }
}
