"""The retry rules, through a front that injects faults before the live
baton: idempotent calls are retried on 503 and broken connections,
honouring Retry-After; an acquire or a campaign outside a session is not
(its outcome is unknown), except when the connection was refused."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import Front, LiveTest, baton, dead_endpoint  # noqa: E402


def first_n(k, fault):
    """The first k requests get fault, the others are forwarded; event
    streams (the hold watcher's) are refused: these tests are about calls."""
    def rule(n, method, path):
        if path.startswith("/v1/events"):
            return ("status", 503, None)
        return fault if n <= k else "forward"
    return rule


class RetryTest(LiveTest):
    def front(self, rule) -> Front:
        f = Front(self.addr, rule)
        self.addCleanup(f.close)
        return f

    def test_an_idempotent_call_is_retried_after_a_503(self):
        name = self.name()
        lk = self.c.acquire(name)
        self.addCleanup(lk.release)
        f = self.front(first_n(1, ("status", 503, None)))
        got = self.client(f.url, retry_backoff=0.01).get(name)
        self.assertEqual(got.token, lk.token)
        self.assertEqual(f.count("GET", "/v1/locks/"), 2)

    def test_an_idempotent_call_is_retried_after_a_broken_connection(self):
        name = self.name()
        lk = self.c.acquire(name)
        self.addCleanup(lk.release)
        f = self.front(first_n(1, "drop"))
        self.assertEqual(self.client(f.url, retry_backoff=0.01).renew(name, lk.token).token, lk.token)
        self.assertEqual(f.count("POST", "/v1/locks/"), 2)

    def test_retry_after_is_honoured(self):
        f = self.front(first_n(1, ("status", 503, 1)))
        t = time.monotonic()
        self.client(f.url, retry_backoff=0.01).cluster()
        self.assertGreaterEqual(time.monotonic() - t, 0.95)
        self.assertEqual(f.count(), 2)

    def test_retries_are_bounded(self):
        f = self.front(lambda n, m, p: ("status", 503, None))
        with self.assertRaises(baton.UnavailableError):
            self.client(f.url, retry_backoff=0.01, max_retries=2).cluster()
        self.assertEqual(f.count(), 3)

    def test_an_acquire_is_not_retried_after_a_503(self):
        name = self.name()
        f = self.front(first_n(1, ("status", 503, None)))
        with self.assertRaises(baton.UnavailableError) as cm:
            self.client(f.url, retry_backoff=0.01).acquire(name)
        self.assertTrue(cm.exception.outcome_unknown)
        self.assertIn("outcome is unknown", str(cm.exception))
        self.assertEqual(f.count("POST", "/v1/locks/"), 1)

    def test_an_acquire_cut_after_it_was_sent_is_not_retried_and_may_have_taken_effect(self):
        name = self.name()
        f = self.front(first_n(1, "forward-drop"))
        with self.assertRaises(baton.UnavailableError) as cm:
            self.client(f.url, retry_backoff=0.01).acquire(name, ttl="2s")
        self.assertTrue(cm.exception.outcome_unknown)
        self.assertEqual(f.count("POST", "/v1/locks/"), 1)
        # It did take effect: a repeat would have been refused as held, or
        # taken a second hold had the first expired.
        self.assertGreater(self.c.get(name).token, 0)

    def test_an_acquire_moves_on_when_the_connection_is_refused(self):
        name = self.name()
        c = self.client([dead_endpoint(), self.addr], retry_backoff=0.01)
        lk = c.acquire(name)
        self.addCleanup(lk.release)
        self.assertEqual(self.c.get(name).token, lk.token)

    def test_an_acquire_in_a_session_is_retried_after_a_503(self):
        name = self.name()
        s = self.c.create_session(ttl="10s")
        self.addCleanup(self.c.delete_session, s.id)
        f = self.front(first_n(1, ("status", 503, None)))
        lk = self.client(f.url, retry_backoff=0.01).acquire(name, session=s.id)
        self.addCleanup(lk._hold.release_quietly)
        self.assertEqual(f.count("POST", "/v1/locks/"), 2)
        self.assertEqual(self.c.get(name).session, s.id)

    def test_a_campaign_and_a_session_create_are_not_retried_after_a_503(self):
        f = self.front(lambda n, m, p: ("status", 503, None))
        c = self.client(f.url, retry_backoff=0.01)
        with self.assertRaises(baton.UnavailableError) as cm:
            c.campaign(self.name("e"))
        self.assertTrue(cm.exception.outcome_unknown)
        with self.assertRaises(baton.UnavailableError):
            c.create_session()
        self.assertEqual(f.count(), 2)


class LossWithoutTheStreamTest(LiveTest):
    """With the event stream kept off (the front answers it 503), a lock
    is still lost by a renew's answer, or by its TTL on the client's clock."""

    def front(self, state):
        def rule(n, method, path):
            if path.startswith("/v1/events") or state.get("down"):
                return ("status", 503, None)
            return "forward"
        f = Front(self.addr, rule)
        self.addCleanup(f.close)
        return f

    def test_a_renew_refusal_sets_lost(self):
        name = self.name()
        f = self.front({})
        lk = self.client(f.url).acquire(name, ttl="2s")
        self.c.revoke(name)
        # The first renew is due at a third of the TTL, about 0.7 s.
        self.assertTrue(lk.lost.wait(1.5), "a renew answered not_held did not set lost")
        self.assertIsInstance(lk.error.cause, baton.NotHeldError)
        self.assertIn("renew", str(lk.error))

    def test_the_ttl_running_out_by_the_clients_clock_sets_lost(self):
        name = self.name()
        state = {}
        f = self.front(state)
        t = time.monotonic()
        lk = self.client(f.url, retry_backoff=0.05).acquire(name, ttl="2s")
        state["down"] = True
        self.assertTrue(lk.lost.wait(3.0), "lost not set when the lease ran out")
        took = time.monotonic() - t
        self.assertLessEqual(took, 2.5)
        self.assertIn("by this client's clock", str(lk.error))
        self.assertGreater(f.count("POST", "/v1/locks/" + name + "/renew"), 0)


if __name__ == "__main__":
    unittest.main()
