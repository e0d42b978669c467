"""Waits longer than one request against a live baton: with a tiny
max_request_wait, a wait in a session is a run of requests that keeps the
session's place in line (keep_place) past the session's TTL, ahead of a
later waiter, and is granted first; a grant while no request is in
flight is the next request's answer; a wait over the max without a
session is refused before any request; campaigns, permits and read/write
holds wait the same way; an interrupt gives the place up."""

import os
import queue
import sys
import threading
import time
import unittest
import unittest.mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import Front, LiveTest, baton, wait_until  # noqa: E402

MAX = 0.2  # the longest wait of one request, in these tests


def in_background(fn, *a, **kw):
    """fn(*a, **kw) in a thread; the queue gets its result or exception."""
    got = queue.Queue()

    def run():
        try:
            got.put(fn(*a, **kw))
        except BaseException as e:  # noqa: BLE001: handed to the test
            got.put(e)
    threading.Thread(target=run, daemon=True).start()
    return got


def result(q, timeout=20):
    v = q.get(timeout=timeout)
    if isinstance(v, BaseException):
        raise v
    return v


class LongWaitTest(LiveTest):
    def front(self, rule=None):
        """A counting front for the node, and a client with MAX through it.
        Event streams (the hold watcher's) are refused: these tests are
        about the acquires' requests."""
        def streamless(n, method, path):
            if path.startswith("/v1/events"):
                return ("status", 503, None)
            return rule(n, method, path) if rule else "forward"

        f = Front(self.addr, streamless)
        self.addCleanup(f.close)
        return f, self.client(f.url, timeout=5, retry_backoff=0.02, max_request_wait=MAX)

    def session(self, owner, ttl="2s"):
        s = self.c.create_session(owner=owner, ttl=ttl)
        self.addCleanup(lambda: self._quietly(self.c.delete_session, s.id))
        return s

    @staticmethod
    def _quietly(fn, *a):
        try:
            fn(*a)
        except baton.BatonError:
            pass

    def test_a_long_wait_keeps_its_place_past_the_sessions_ttl_and_is_granted_first(self):
        name = self.name()
        f, c = self.front()
        holder = self.c.acquire(name, ttl="10s", owner="holder")
        self.addCleanup(holder._hold.release_quietly)
        s = self.session("early")
        began = time.monotonic()
        early = in_background(c.acquire, name, owner="early", session=s.id, wait=baton.WAIT_FOREVER)
        wait_until(lambda: len(self.c.get(name).waiters) == 1, timeout=10, what="early queued")
        late = in_background(self.client().acquire, name, owner="late", ttl="10s", wait="60s")
        wait_until(lambda: len(self.c.get(name).waiters) == 2, timeout=10, what="late queued")
        # 16 requests of at least MAX each: past the session's TTL (2s),
        # which only the client's renewals keep alive meanwhile.
        path = "/v1/locks/" + name
        wait_until(lambda: f.count("POST", path) >= 16, timeout=30, what="16 requests of the long wait")
        self.assertGreater(time.monotonic() - began, 3.0)
        self.assertGreaterEqual(f.count("POST", f"/v1/sessions/{s.id}/renew"), 2, "the session was renewed")
        self.assertTrue(early.empty() and late.empty(), "both still wait")
        self.assertEqual([w.owner for w in self.c.get(name).waiters], ["early", "late"], "early's place held")
        holder.release()
        lk = result(early)
        self.addCleanup(lk._hold.release_quietly)
        self.assertGreater(lk.token, holder.token)
        self.assertEqual((lk.info.owner, lk.info.session), ("early", s.id))
        self.assertTrue(late.empty(), "the later waiter stays behind the long wait")
        self.assertEqual(self.c.get(name).token, lk.token)
        lk.release()
        got = result(late)
        self.addCleanup(got._hold.release_quietly)
        self.assertGreater(got.token, lk.token)
        self.assertEqual(got.info.owner, "late")

    def test_a_grant_while_no_request_is_in_flight_is_the_next_requests_answer(self):
        name = self.name()
        path = "/v1/locks/" + name
        gate, mu, seen = threading.Event(), threading.Lock(), []

        def rule(n, method, path_):
            # The second acquire waits here, before the node sees it,
            # until the holder has released.
            if method == "POST" and path_ == path:
                with mu:
                    seen.append(n)
                    k = len(seen)
                if k == 2:
                    gate.wait(20)
            return "forward"

        f, c = self.front(rule)
        self.addCleanup(gate.set)
        holder = self.c.acquire(name, ttl="10s", owner="holder")
        self.addCleanup(holder._hold.release_quietly)
        s = self.session("waiter", ttl="10s")
        got = in_background(c.acquire_once, name, owner="waiter", session=s.id, wait="1m")
        wait_until(lambda: f.count("POST", path) >= 2, timeout=10, what="the first request's place kept")
        holder.release()
        # Granted to the session's place, with no request of it at the node.
        info = wait_until(lambda: self._held_by(name, s.id), timeout=10, what="the place granted")
        self.assertEqual(info.owner, "waiter")
        gate.set()
        lk = result(got)
        self.assertEqual((lk.token, lk.session), (info.token, s.id))
        self.assertEqual(f.count("POST", path), 2, "the request after the grant answered with it")
        self.c.release(name, lk.token)

    def _held_by(self, name, session):
        try:
            info = self.c.get(name)
        except baton.NotHeldError:
            return None
        return info if info.session == session else None

    def test_a_wait_over_the_max_without_a_session_is_refused_before_any_request(self):
        name = self.name()
        f, c = self.front()
        calls = {
            "acquire": lambda w: c.acquire(name, wait=w),
            "acquire_once": lambda w: c.acquire_once(name, wait=w),
            "campaign": lambda w: c.campaign(name, wait=w),
            "acquire_permit": lambda w: c.acquire_permit(name, 1, wait=w),
            "acquire_rw": lambda w: c.acquire_rw(name, "write", wait=w),
        }
        for what, call in calls.items():
            for wait in (1, "1s", baton.WAIT_FOREVER):
                with self.subTest(call=what, wait=wait):
                    with self.assertRaises(baton.InvalidError) as cm:
                        call(wait)
                    self.assertIn("needs a session", str(cm.exception))
                    self.assertFalse(cm.exception.place_kept)
        self.assertEqual(f.count(), 0, "no request was sent")
        # A wait within the max is one request, session or not.
        lk = c.acquire(name, wait=MAX)
        self.addCleanup(lk._hold.release_quietly)
        self.assertEqual(f.count("POST", "/v1/locks/" + name), 1)
        self.assertEqual(c.max_request_wait, MAX)
        self.assertEqual(self.c.max_request_wait, baton.MAX_REQUEST_WAIT)
        for bad in (-1, 301, "6m", float("inf")):
            with self.subTest(max_request_wait=bad):
                self.assertRaises(ValueError, baton.Client, self.addr, max_request_wait=bad)

    def test_a_finite_long_wait_runs_out_and_gives_its_place_up(self):
        name = self.name()
        f, c = self.front()
        holder = self.c.acquire(name, ttl="10s", owner="holder")
        self.addCleanup(holder._hold.release_quietly)
        s = self.session("waiter", ttl="10s")
        began = time.monotonic()
        with self.assertRaises(baton.HeldError) as cm:
            c.acquire(name, owner="waiter", session=s.id, wait=1.0)
        self.assertGreaterEqual(time.monotonic() - began, 0.95)
        self.assertGreaterEqual(f.count("POST", "/v1/locks/" + name), 3)
        e = cm.exception
        self.assertFalse(e.place_kept, "the last request had no keep_place")
        self.assertEqual(e.holder.token, holder.token)
        self.assertEqual(self.c.get(name).waiters, [], "no place left in line")

    def test_a_campaign_waits_longer_than_one_request_in_its_place(self):
        name = self.name("e")
        f, c = self.front()
        leader = self.c.campaign(name, candidate="a", ttl="10s")
        self.addCleanup(leader._hold.release_quietly)
        s = self.session("b")
        b = in_background(c.campaign, name, candidate="b", value="b", session=s.id, wait=baton.WAIT_FOREVER)
        wait_until(lambda: len(self.c.leader(name).candidates) == 1, timeout=10, what="b in line")
        late = in_background(self.client().campaign, name, candidate="c", ttl="10s", wait="60s")
        wait_until(lambda: len(self.c.leader(name).candidates) == 2, timeout=10, what="c in line")
        path = f"/v1/elections/{name}/campaign"
        wait_until(lambda: f.count("POST", path) >= 16, timeout=30, what="16 requests of b's campaign")
        self.assertEqual([x.candidate for x in self.c.leader(name).candidates], ["b", "c"], "b's place held")
        leader.resign()
        ld = result(b)
        self.addCleanup(ld._hold.release_quietly)
        self.assertEqual((ld.info.session, ld.value, ld.term), (s.id, "b", 2))
        self.assertGreater(ld.token, leader.token)
        self.assertTrue(late.empty(), "c stays behind b")
        ld.resign()
        c_ld = result(late)
        self.addCleanup(c_ld._hold.release_quietly)
        self.assertEqual(self.c.leader(name).candidate, "c")

    def test_a_write_hold_waits_longer_than_one_request_in_its_place(self):
        name = self.name("rw")
        f, c = self.front()
        holder = self.c.acquire_rw(name, "write", owner="holder", ttl="10s")
        self.addCleanup(holder._hold.release_quietly)
        s = self.session("waiter", ttl="10s")
        got = in_background(c.acquire_rw, name, "write", owner="waiter", session=s.id, wait="1m")
        wait_until(lambda: f.count("POST", "/v1/rwlocks/" + name) >= 4, timeout=20, what="4 requests")
        self.assertTrue(got.empty())
        self.assertEqual([w.owner for w in self.c.get_rwlock(name).waiters], ["waiter"])
        holder.release()
        h = result(got)
        self.addCleanup(h._hold.release_quietly)
        self.assertEqual((h.info.owner, h.info.session, h.mode), ("waiter", s.id, "write"))
        self.assertGreater(h.token, holder.token)
        h.release()

    def test_a_permits_long_wait_keeps_its_place_then_runs_out(self):
        name = self.name("s")
        f, c = self.front()
        holder = self.c.acquire_permit(name, 1, owner="holder", ttl="10s")
        self.addCleanup(holder._hold.release_quietly)
        s = self.session("waiter", ttl="10s")
        got = in_background(c.acquire_permit, name, 1, owner="waiter", session=s.id, wait=1.5)
        wait_until(lambda: f.count("POST", "/v1/semaphores/" + name) >= 3, timeout=20, what="3 requests")
        self.assertEqual([w.owner for w in self.c.get_semaphore(name).waiters], ["waiter"], "one place, kept")
        with self.assertRaises(baton.SemaphoreFullError) as cm:
            result(got)
        self.assertFalse(cm.exception.place_kept, "the last request had no keep_place")
        self.assertGreaterEqual(f.count("POST", "/v1/semaphores/" + name), 4)
        self.assertEqual(self.c.get_semaphore(name).waiters, [], "no place left in line")


    def test_a_permit_released_between_two_requests_goes_to_the_sessions_next_one(self):
        # A permit is not granted to a place while no request waits at
        # it: the place keeps the head of the line, and the session's
        # next request takes the permit (a later waiter stays behind).
        name = self.name("g")
        f, c = self.front()
        holder = self.c.acquire_permit(name, 1, owner="holder", ttl="10s")
        s = self.session("waiter", ttl="10s")
        got = in_background(c.acquire_permit, name, 1, owner="waiter", session=s.id, wait=baton.WAIT_FOREVER)
        wait_until(lambda: f.count("POST", "/v1/semaphores/" + name) >= 3, timeout=20, what="3 requests")
        late = in_background(self.client().acquire_permit, name, 1, owner="late", ttl="10s", wait="30s")
        wait_until(lambda: len(self.c.get_semaphore(name).waiters) == 2, timeout=10, what="late queued")
        holder.release()
        permit = result(got)
        self.addCleanup(permit._hold.release_quietly)
        self.assertEqual(permit.info.session, s.id)
        self.assertEqual([w.owner for w in self.c.get_semaphore(name).waiters], ["late"], "late still waits")
        permit.release()
        late_permit = result(late)
        late_permit.release()


class InterruptTest(unittest.TestCase):
    """An interrupt between two requests of a long wait gives the place
    up with one last request without keep_place, and ends what that one
    was granted."""

    def test_an_interrupt_gives_the_place_up_and_undoes_a_grant(self):
        c = baton.Client("http://127.0.0.1:1", max_request_wait=MAX)
        self.addCleanup(c.close)
        kept = baton.HeldError("held", status=409, problem=baton.Problem(code="lock_held", place_kept=True))
        self.assertTrue(kept.place_kept)
        sent, undone = [], []

        def send(wait, keep):
            sent.append((wait, keep))
            if len(sent) == 1:
                raise kept
            if len(sent) == 2:
                raise KeyboardInterrupt
            return "granted"

        with unittest.mock.patch("baton.client._SessionKeeper"):
            with self.assertRaises(KeyboardInterrupt):
                c._in_line("acquire 'x'", "sess", baton.WAIT_FOREVER, send, undone.append)
        self.assertEqual(sent[:2], [(MAX, True), (MAX, True)])
        self.assertEqual(len(sent), 3)
        self.assertFalse(sent[2][1], "the give-up has no keep_place")
        self.assertLess(sent[2][0], MAX)
        self.assertEqual(undone, ["granted"])

    def test_an_error_that_is_no_kept_place_ends_the_wait_as_it_is(self):
        c = baton.Client("http://127.0.0.1:1", max_request_wait=MAX)
        self.addCleanup(c.close)
        sent = []

        def send(wait, keep):
            sent.append((wait, keep))
            raise baton.HeldError("held", status=409, problem=baton.Problem(code="lock_held"))

        with unittest.mock.patch("baton.client._SessionKeeper"):
            with self.assertRaises(baton.HeldError) as cm:
                c._in_line("acquire 'x'", "sess", 10, send, lambda r: None)
        self.assertFalse(cm.exception.place_kept)
        self.assertEqual(sent, [(MAX, True)], "no give-up after an answer that kept no place")


if __name__ == "__main__":
    unittest.main()
