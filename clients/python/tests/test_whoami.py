"""whoami: who the client's token speaks for, its rules and its quotas
with what they count now, against a node without authentication and one
run with a policy file."""

import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import LiveTest, baton, server, wait_until  # noqa: E402

SCOPED = "python-client-whoami-scoped-token"
PLAIN = "python-client-whoami-plain-token"
CLEAN = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}

# A credential scoped to three prefixes (given out of order: whoami sorts
# them) with quotas, waiters not among them; one with no quota.
POLICY = f"""
credentials:
  - name: team-w
    tokens: ["{SCOPED}"]
    rules: {{"w.audit.": read, "w.": write, "shared.": read}}
    quotas: {{holds: 5, sessions: 2, streams: 3, rate: 50.5, burst: 100}}
  - name: plain
    tokens: ["{PLAIN}"]
    rules: {{"": admin}}
"""


class WhoamiTest(LiveTest):
    def test_without_authentication_every_request_may_do_everything(self):
        w = self.c.whoami()
        self.assertIsInstance(w, baton.Whoami)
        self.assertFalse(w.authentication)
        self.assertIsNone(w.credential)
        self.assertEqual(w.rules, [baton.Rule(prefix="", role="admin")])
        self.assertIsNone(w.quotas)
        self.assertIsNone(w.usage)


class PolicyWhoamiTest(LiveTest):
    def setUp(self):
        self.addr = server(POLICY, "policy.yaml").addr

    def test_a_scoped_credential_reads_its_name_rules_quotas_and_usage(self):
        c = self.client(token=SCOPED)
        w = c.whoami()
        self.assertTrue(w.authentication)
        self.assertEqual(w.credential, "team-w")
        self.assertEqual(w.rules, [baton.Rule("shared.", "read"), baton.Rule("w.", "write"),
                                   baton.Rule("w.audit.", "read")])
        self.assertEqual(w.quotas, baton.Quotas(holds=5, sessions=2, streams=3, rate=50.5, burst=100))
        self.assertIsNone(w.quotas.waiters)
        self.assertEqual(w.usage, baton.QuotaUsage(holds=0, sessions=0))

        lk = c.acquire(f"w.{self.name()}", ttl="60s")
        self.addCleanup(lk.release)
        # The node counts its own grant at once; waiting is for a slow
        # machine only.
        wait_until(lambda: c.whoami().usage == baton.QuotaUsage(holds=1, sessions=0), what="usage of holds 1")

    def test_a_credential_without_quotas_reads_neither_quotas_nor_usage(self):
        w = self.client(token=PLAIN).whoami()
        self.assertEqual((w.authentication, w.credential), (True, "plain"))
        self.assertEqual(w.rules, [baton.Rule("", "admin")])
        self.assertIsNone(w.quotas)
        self.assertIsNone(w.usage)

    def test_without_a_token_whoami_is_unauthorized(self):
        with mock.patch.dict(os.environ, CLEAN, clear=True):
            c = self.client()
        with self.assertRaises(baton.UnauthorizedError):
            c.whoami()


if __name__ == "__main__":
    unittest.main()
