"""Requests to yield against a live baton: a holder's on_yield hears each
request made of it, with who asked and why, well within a second; a
request made before on_yield was set is passed on when it is."""

import os
import queue
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import LiveTest, baton  # noqa: E402


class YieldTest(LiveTest):
    def test_a_holder_hears_a_request_to_yield_within_a_deadline(self):
        name = self.name()
        lk = self.c.acquire(name, ttl="30s", owner="holder")
        self.addCleanup(lk.release)
        heard = queue.Queue()
        lk.on_yield(heard.put)
        sent = time.monotonic()
        asked = self.client().yield_(name, reason="backup window", owner="backup")
        self.assertIsInstance(asked, baton.YieldRequested)
        self.assertEqual((asked.kind, asked.name, asked.tokens, asked.owner), ("lock", name, [lk.token], "backup"))
        ev = heard.get(timeout=5)
        took = time.monotonic() - sent
        self.assertLess(took, 0.5, f"heard the request {took:.3f}s after it was sent")
        self.assertEqual((ev.type, ev.token, ev.owner, ev.reason, ev.revision),
                         ("yield_requested", lk.token, "backup", "backup window", asked.revision))
        self.assertFalse(lk.lost.is_set(), "a request to yield ends nothing")

    def test_a_request_made_before_on_yield_is_set_is_delivered(self):
        name = self.name()
        p = self.c.acquire_permit(name, 2, ttl="30s")
        self.addCleanup(p.release)
        asked = self.client().yield_permits(name, token=p.token, reason="priority job")
        self.assertEqual(asked.tokens, [p.token])
        # The request reaches the hold on the client's stream; then a late
        # callback gets it at once.
        heard = queue.Queue()
        deadline = time.monotonic() + 5
        while heard.empty() and time.monotonic() < deadline:
            p.on_yield(heard.put)
            if heard.empty():
                time.sleep(0.02)
        ev = heard.get(timeout=1)
        self.assertEqual((ev.kind, ev.token, ev.reason), ("semaphore", p.token, "priority job"))

    def test_a_yield_to_nothing_held_raises_not_held(self):
        with self.assertRaises(baton.NotHeldError):
            self.c.yield_(self.name())
        with self.assertRaises(baton.NoLeaderError):
            self.c.yield_leadership(self.name())
