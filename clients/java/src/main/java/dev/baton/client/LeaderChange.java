package dev.baton.client;

import java.util.Optional;

/**
 * One change of an election, as {@link Client#observe} delivers it.
 *
 * @param revision the etcd revision of the change
 * @param leader who leads from then on, or empty when nobody does
 */
public record LeaderChange(long revision, Optional<LeaderInfo> leader) {}
