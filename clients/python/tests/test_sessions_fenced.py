"""Sessions and fenced registers against a live baton."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import LiveTest, baton  # noqa: E402


class SessionTest(LiveTest):
    def test_create_get_renew_list_delete(self):
        owner = self.name("owner")
        s = self.c.create_session(owner=owner, ttl="10s")
        self.assertEqual((s.owner, s.ttl), (owner, 10.0))
        lk = self.c.acquire(self.name(), session=s.id)
        got = self.c.get_session(s.id)
        self.assertEqual(got.locks, [lk.name])
        renewed = self.c.renew_session(s.id)
        # etcd reports a lease's TTL left in whole seconds: up to a second early.
        self.assertEqual(renewed.id, s.id)
        self.assertGreater(renewed.expires_at, s.created_at)
        listed, _ = self.c.sessions(prefix=owner)
        self.assertEqual([x.id for x in listed], [s.id])
        self.assertEqual(self.c.get(lk.name).session, s.id)
        lk.release()
        self.assertEqual(self.c.get_session(s.id).locks, [])
        self.c.delete_session(s.id)
        with self.assertRaises(baton.SessionNotFoundError):
            self.c.get_session(s.id)

    def test_a_session_deleted_elsewhere_sets_its_locks_lost_within_a_second(self):
        s = self.c.create_session(ttl="10s")
        lk = self.c.acquire(self.name(), session=s.id)
        self.client().delete_session(s.id)
        self.assertTrue(lk.lost.wait(1.0), "lost not set within a second of the session's deletion")
        with self.assertRaises(baton.LockLostError):
            lk.release()

    def test_acquiring_again_in_the_session_hands_the_same_hold_back(self):
        s = self.c.create_session(ttl="10s")
        self.addCleanup(self.c.delete_session, s.id)
        name = self.name()
        a = self.c.acquire(name, session=s.id)
        b = self.c.acquire(name, session=s.id)
        self.assertEqual(a.token, b.token)
        self.assertFalse(b.lost.is_set())


class FencedTest(LiveTest):
    def test_a_stale_token_is_rejected_with_the_largest_token_seen(self):
        name, resource = self.name(), self.name("res")
        old = self.c.acquire(name)
        self.c.put_fenced(resource, old.token, {"balance": 1}, lock=name)
        old.release()
        new = self.c.acquire(name)
        self.addCleanup(new.release)
        w = self.c.put_fenced(resource, new.token, {"balance": 2}, lock=name)
        self.assertEqual((w.token, w.value), (new.token, {"balance": 2}))
        with self.assertRaises(baton.StaleTokenError) as cm:
            self.c.put_fenced(resource, old.token, {"balance": 3})
        self.assertEqual(cm.exception.max_token, new.token)
        got = self.c.get_fenced(resource)
        self.assertEqual((got.resource, got.token, got.value), (resource, new.token, {"balance": 2}))
        self.assertGreater(got.revision, 0)

    def test_a_write_naming_a_lock_its_token_does_not_hold_is_refused(self):
        name, resource = self.name(), self.name("res")
        lk = self.c.acquire(name)
        self.addCleanup(lk.release)
        other = self.c.acquire(self.name("other"))
        self.addCleanup(other.release)
        with self.assertRaises(baton.NotHolderError):
            self.c.put_fenced(resource, other.token, "x", lock=name)
        with self.assertRaises(baton.NotFoundError):
            self.c.get_fenced(resource)


if __name__ == "__main__":
    unittest.main()
