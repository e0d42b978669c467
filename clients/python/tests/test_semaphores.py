"""Semaphores against a live baton: the limit respected, a full
semaphore's holders and a mismatch's limit in the errors, a waiter let in
by a release, a revoked permit lost within a second, the with block, and
the listing, the session's semaphores and the audit trail's kind."""

import os
import queue
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import LiveTest, baton, wait_until  # noqa: E402


class SemaphoreTest(LiveTest):
    def take(self, name, limit=2, **kw):
        p = self.c.acquire_permit(name, limit, **kw)
        self.addCleanup(p._hold.release_quietly)
        return p

    def test_the_limit_is_respected_and_a_full_semaphore_names_its_holders(self):
        name = self.name("s")
        a = self.take(name, owner="a", ttl="10s", metadata={"job": "x"})
        b = self.take(name, owner="b")
        self.assertEqual((a.limit, b.limit), (2, 2))
        self.assertNotEqual(a.token, b.token)
        with self.assertRaises(baton.SemaphoreFullError) as cm:
            self.client().acquire_permit(name, 2, owner="c")
        e = cm.exception
        self.assertEqual((e.code, e.status), ("semaphore_full", 409))
        self.assertEqual(sorted((h.owner, h.token) for h in e.holders), sorted([("a", a.token), ("b", b.token)]))
        got = self.c.get_semaphore(name)
        self.assertEqual((got.name, got.limit), (name, 2))
        self.assertEqual([h.token for h in got.holders], [a.token, b.token], "oldest first")
        self.assertEqual((got.holders[0].metadata, got.holders[0].ttl), ({"job": "x"}, 10.0))

    def test_another_limit_is_refused_with_the_semaphores_limit(self):
        name = self.name("s")
        self.take(name, limit=3)
        with self.assertRaises(baton.LimitMismatchError) as cm:
            self.c.acquire_permit(name, 5)
        self.assertEqual((cm.exception.code, cm.exception.limit), ("limit_mismatch", 3))

    def test_a_release_lets_the_first_waiter_in(self):
        name = self.name("s")
        first = self.c.acquire_permit(name, 1)
        got = queue.Queue()
        other = self.client()
        threading.Thread(target=lambda: got.put(other.acquire_permit(name, 1, owner="waiter", wait="10s")),
                         daemon=True).start()
        wait_until(lambda: self.c.get_semaphore(name).waiters, what="second acquire queued")
        self.assertEqual(self.c.get_semaphore(name).waiters[0].owner, "waiter")
        first.release()
        second = got.get(timeout=5)
        self.addCleanup(second.release)
        self.assertGreater(second.token, first.token)
        self.assertEqual([h.token for h in self.c.get_semaphore(name).holders], [second.token])
        self.assertFalse(first.lost.is_set(), "a release is no loss")

    def test_a_revoked_permit_is_lost_within_a_second(self):
        name = self.name("s")
        p = self.c.acquire_permit(name, 2)
        keep = self.take(name)
        self.client().revoke_permit(name, p.token, reason="test")
        self.assertTrue(p.lost.wait(1.0), "lost not set within a second of the revoke")
        self.assertIsInstance(p.error.cause, baton.NotHeldError)
        self.assertIn("revoked", str(p.error))
        self.assertIn("permit of semaphore", str(p.error))
        with self.assertRaises(baton.LockLostError):
            p.release()
        self.assertFalse(keep.lost.is_set(), "the other permit is still held")
        self.assertEqual([h.token for h in self.c.get_semaphore(name).holders], [keep.token])

    def test_a_release_by_token_elsewhere_sets_lost(self):
        name = self.name("s")
        p = self.c.acquire_permit(name, 1)
        self.client().release_permit(name, p.token)
        self.assertTrue(p.lost.wait(1.0))
        self.assertIn("released", str(p.error))

    def test_renewal_keeps_a_short_permit_held_past_its_ttl(self):
        name = self.name("s")
        p = self.take(name, ttl="2s")
        self.assertFalse(p.lost.wait(2.6), f"lost: {p.error}")
        self.assertEqual([h.token for h in self.c.get_semaphore(name).holders], [p.token])
        self.assertEqual(self.c.renew_permit(name, p.token).token, p.token)

    def test_the_with_block_releases_and_raises_when_the_permit_was_lost(self):
        name = self.name("s")
        with self.c.semaphore(name, 1) as p:
            self.assertEqual(self.c.get_semaphore(name).holders[0].token, p.token)
        with self.assertRaises(baton.NotHeldError):
            self.c.get_semaphore(name)
        with self.assertRaises(baton.LockLostError):
            with self.c.semaphore(name, 1) as p:
                self.client().revoke_permit(name, p.token)
                self.assertTrue(p.lost.wait(1.0))

    def test_semaphores_are_listed_a_page_at_a_time(self):
        prefix = self.name("p")
        names = [prefix + x for x in ("-a", "-b", "-c")]
        for n in names:
            self.take(n)
        seen, cursor = [], ""
        for _ in range(len(names) + 1):
            page, cursor = self.c.semaphores(prefix=prefix, limit=2, cursor=cursor or None)
            self.assertLessEqual(len(page), 2)
            seen += [(s.name, s.limit, len(s.holders)) for s in page]
            if not cursor:
                break
        self.assertEqual(seen, [(n, 2, 1) for n in names])

    def test_a_sessions_permits_are_in_its_semaphores_and_end_with_it(self):
        s = self.c.create_session(ttl="10s")
        name = self.name("s")
        a = self.c.acquire_permit(name, 3, session=s.id)
        b = self.c.acquire_permit(name, 3, session=s.id)
        self.assertNotEqual(a.token, b.token, "each request takes a permit of its own")
        self.assertEqual(self.c.get_session(s.id).semaphores, [name])
        self.client().delete_session(s.id)
        self.assertTrue(a.lost.wait(1.0) and b.lost.wait(1.0), "permits not lost with their session")

    def test_history_and_events_filter_by_kind_semaphore(self):
        name = self.name("s")
        with self.c.events(since=self.c.cluster().revision, kind="semaphore", name=name) as stream:
            p = self.c.acquire_permit(name, 4, owner="h")
            p.release()
            it = iter(stream)
            got = [next(it), next(it)]
        self.assertEqual([(e.type, e.kind, e.name, e.token) for e in got],
                         [("acquired", "semaphore", name, p.token), ("released", "semaphore", name, p.token)])
        self.assertEqual(got[0].limit, 4)
        events, _ = self.c.history(kind="semaphore", name=name)
        self.assertEqual([e.type for e in events], ["released", "acquired"], "newest first")


if __name__ == "__main__":
    unittest.main()
