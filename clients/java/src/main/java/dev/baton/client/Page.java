package dev.baton.client;

import java.util.List;

/**
 * One page of a listing.
 *
 * @param <T> what is listed
 * @param items the page, sorted by name; it may hold fewer than the limit asked for
 * @param nextCursor where the next page starts; empty on the last
 */
public record Page<T>(List<T> items, String nextCursor) {}
