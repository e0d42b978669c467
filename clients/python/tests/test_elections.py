"""Elections against a live baton: campaign, a handover to the next in
line, observe (resuming without a repeat), loss within a second, and the
leader's fenced writes."""

import os
import queue
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import LiveTest, baton, wait_until  # noqa: E402
from test_events import reader, take  # noqa: E402


class ElectionTest(LiveTest):
    def test_campaign_leads_and_a_second_campaign_sees_the_leader(self):
        name = self.name("e")
        ld = self.c.campaign(name, value={"addr": "10.0.0.5:8080"}, candidate="a", ttl="10s")
        self.addCleanup(ld._hold.release_quietly)
        self.assertGreater(ld.token, 0)
        self.assertEqual((ld.term, ld.value), (1, {"addr": "10.0.0.5:8080"}))
        with self.assertRaises(baton.ElectionHeldError) as cm:
            self.client().campaign(name, candidate="b")
        self.assertEqual((cm.exception.leader.candidate, cm.exception.leader.token), ("a", ld.token))
        got = self.c.leader(name)
        self.assertEqual((got.candidate, got.token, got.value), ("a", ld.token, {"addr": "10.0.0.5:8080"}))

    def test_a_resignation_hands_over_and_observe_follows_every_change(self):
        name = self.name("e")
        with self.c.observe(name) as changes:
            q = reader(changes)
            revision, leader = take(q, 1)[0]
            self.assertIsNone(leader, "nobody leads yet")
            self.assertGreater(revision, 0)
            a = self.c.campaign(name, value="a", candidate="a")
            self.assertEqual(take(q, 1)[0].leader.value, "a")
            b_client = self.client()
            got_b = queue.Queue()
            threading.Thread(target=lambda: got_b.put(b_client.campaign(name, value="b", candidate="b", wait="10s")),
                             daemon=True).start()
            wait_until(lambda: self.c.leader(name).candidates, what="b waiting in line")
            a.proclaim("a2")
            self.assertEqual(a.value, "a2")
            self.assertEqual(take(q, 1)[0].leader.value, "a2")
            # A broken stream resumes after the last change: no repeat.
            changes._drop()
            a.resign()
            b = got_b.get(timeout=5)
            handover = take(q, 1)[0]
            self.assertEqual((handover.leader.candidate, handover.leader.token, handover.leader.term),
                             ("b", b.token, 2))
            self.assertEqual(b.term, 2)
            self.assertFalse(a.lost.is_set(), "a resignation is no loss")
            b.resign()
            self.assertIsNone(take(q, 1)[0].leader)
            self.assertTrue(q.empty())
        with self.assertRaises(baton.NoLeaderError):
            self.c.leader(name)

    def test_a_transfer_hands_the_leadership_to_the_named_candidate(self):
        name = self.name("e")
        a = self.c.campaign(name, candidate="a")
        got = {}
        for who in ("b", "c"):
            cl = self.client()
            threading.Thread(target=lambda who=who, cl=cl: got.setdefault(who, cl.campaign(name, candidate=who,
                                                                                           wait="20s")),
                             daemon=True).start()
            wait_until(lambda who=who: who in {x.candidate for x in self.c.leader(name).candidates},
                       what=f"{who} waiting in line")
        nxt = a.transfer("c")  # ahead of b, who waited longer
        self.assertEqual((nxt.candidate, nxt.term), ("c", 2))
        c = wait_until(lambda: got.get("c"), what="c's campaign returns")
        self.addCleanup(c._hold.release_quietly)
        self.assertEqual((c.token, c.term), (nxt.token, 2))
        self.assertTrue(a.done.is_set())
        self.assertFalse(a.lost.is_set(), "a transfer is no loss")
        self.assertEqual(self.c.leader(name).candidate, "c")
        with self.assertRaises(baton.LockLostError):
            a.transfer("b")
        c.resign()
        b = wait_until(lambda: got.get("b"), what="b's campaign returns")
        b.resign()

    def test_a_transfer_to_a_candidate_not_waiting_leaves_the_leadership_held(self):
        name = self.name("e")
        a = self.c.campaign(name, candidate="a", ttl="2s")
        self.addCleanup(a._hold.release_quietly)
        with self.assertRaises(baton.CandidateNotWaitingError):
            a.transfer("nobody")
        # Its renewal resumed: it outlives its TTL, and is not lost.
        past = time.monotonic() + 3.0

        def still_leads():
            self.assertEqual(self.c.leader(name).token, a.token)
            self.assertFalse(a.lost.is_set(), a.error)
            return time.monotonic() > past

        wait_until(still_leads, timeout=10, what="the leadership outlives its TTL")
        a.resign()

    def test_a_revoke_sets_the_leaderships_lost_within_a_second(self):
        name = self.name("e")
        ld = self.c.campaign(name)
        self.client().revoke_leadership(name, reason="test")
        self.assertTrue(ld.lost.wait(1.0), "lost not set within a second of the revoke")
        self.assertIsInstance(ld.error.cause, baton.NoLeaderError)
        with self.assertRaises(baton.LockLostError):
            ld.resign()

    def test_a_leadership_in_a_with_block_resigns_on_exit(self):
        name = self.name("e")
        with self.c.campaign(name) as ld:
            self.assertEqual(self.c.leader(name).token, ld.token)
        with self.assertRaises(baton.NoLeaderError):
            self.c.leader(name)

    def test_a_deposed_leaders_fenced_write_is_refused(self):
        name, resource = self.name("e"), self.name("res")
        old = self.c.campaign(name)
        self.c.put_fenced(resource, old.token, 1, election=name)
        old.resign()
        new = self.c.campaign(name)
        self.addCleanup(new.resign)
        self.c.put_fenced(resource, new.token, 2, election=name)
        with self.assertRaises(baton.NotHolderError):
            self.c.put_fenced(resource, old.token, 3, election=name)
        with self.assertRaises(baton.StaleTokenError):
            self.c.put_fenced(resource, old.token, 3)
        self.assertEqual(self.c.get_fenced(resource).value, 2)

    def test_a_lock_and_a_leadership_on_one_client_are_both_watched(self):
        name, lname = self.name("e"), self.name("l")
        ld = self.c.campaign(name)
        lk = self.c.acquire(lname)
        self.addCleanup(lk._hold.release_quietly)
        self.client().revoke_leadership(name)
        self.assertTrue(ld.lost.wait(1.0))
        self.assertEqual(self.c._watch._filter, ("lock", lname))
        self.client().revoke(lname)
        self.assertTrue(lk.lost.wait(1.0))


if __name__ == "__main__":
    unittest.main()
