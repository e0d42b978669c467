package dev.baton.client;

import java.util.List;

/**
 * One page of the audit trail, newest first.
 *
 * @param events the events
 * @param nextBefore the revision to pass as before for the next page; 0 on the last
 */
public record History(List<Event> events, long nextBefore) {}
