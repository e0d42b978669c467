package dev.baton.client;

import java.util.List;
import java.util.Map;

/**
 * A page of keys, in key order (the API's KeyList).
 *
 * @param keys the keys, with their values; a page of large values may hold fewer than the limit asked for
 * @param nextCursor where the next page starts; empty on the last
 * @param revision the revision the page was read at: {@link Client#watchKeys(String, long)} from it misses no change after the page
 */
public record KeyList(List<Key> keys, String nextCursor, long revision) {
    static KeyList from(Map<String, Object> m) {
        return new KeyList(Wire.records(m, "keys", Key::from), Json.str(m, "next_cursor"), Json.lng(m, "revision"));
    }
}
