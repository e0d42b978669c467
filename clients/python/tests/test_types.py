"""The dataclasses have exactly the members of openapi/openapi.json's
schemas, so that a member added to the API but not here fails."""

import dataclasses
import json
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import baton  # noqa: E402

OPENAPI = Path(__file__).resolve().parents[3] / "openapi" / "openapi.json"

# dataclass -> the schema it mirrors.
MIRRORS = {
    baton.LockInfo: "Lock", baton.Waiter: "Waiter", baton.LeaderInfo: "Leader", baton.Candidate: "Candidate",
    baton.Session: "Session", baton.Event: "Event", baton.FencedValue: "FencedValue", baton.Problem: "Problem",
    baton.Cluster: "Cluster", baton.Member: "Member", baton.HoldInfo: "Hold", baton.SemaphoreInfo: "Semaphore",
    baton.RWLockInfo: "RWLock", baton.LockSetInfo: "LockSet", baton.Key: "Key", baton.KeyList: "KeyList",
    baton.YieldRequested: "YieldRequested", baton.Whoami: "Whoami", baton.Rule: "Rule", baton.Quotas: "Quotas",
    baton.QuotaUsage: "QuotaUsage",
}


class TypesTest(unittest.TestCase):
    schemas = json.loads(OPENAPI.read_text())["components"]["schemas"]

    def test_each_dataclass_has_its_schemas_members_exactly(self):
        for cls, schema in MIRRORS.items():
            with self.subTest(cls=cls.__name__, schema=schema):
                want = set(self.schemas[schema]["properties"])
                have = {f.name for f in dataclasses.fields(cls)}
                self.assertEqual(have - want, set(), f"{cls.__name__} has members the API's {schema} lacks")
                self.assertEqual(want - have, set(), f"the API's {schema} has members {cls.__name__} lacks")

    def test_a_listed_session_is_a_session_without_its_holds(self):
        listed = set(self.schemas["ListedSession"]["properties"])
        self.assertLessEqual(listed, {f.name for f in dataclasses.fields(baton.Session)})

    def test_the_request_bodies_sent_are_what_the_api_takes(self):
        # The members each call sends, as in baton/client.py.
        sent = {"AcquireRequest": {"owner", "ttl", "session", "wait", "keep_place", "lock_delay", "min_hold",
                                   "metadata"},
                "CampaignRequest": {"candidate", "value", "ttl", "session", "wait", "keep_place", "lock_delay",
                                    "min_hold", "metadata"},
                "FencedRequest": {"token", "value", "lock", "election", "rwlock"},
                "SessionRequest": {"owner", "ttl", "bind", "grace"}, "RenewRequest": {"token"},
                "ProclaimRequest": {"token", "value"}, "TransferRequest": {"token", "to"}, "RevokeRequest": {"reason"},
                "PermitRequest": {"limit", "owner", "ttl", "session", "wait", "keep_place", "min_hold", "metadata"},
                "RWRequest": {"mode", "owner", "ttl", "session", "wait", "keep_place", "min_hold", "metadata"},
                "HoldRevokeRequest": {"token", "reason"}, "YieldRequest": {"owner", "reason", "token"},
                "LockSetRequest": {"names", "owner", "ttl", "session", "wait", "min_hold", "metadata"},
                "LockSetTokenRequest": {"names", "token"},
                "PutKeyRequest": {"value", "if_revision", "session", "lock", "election", "semaphore", "rwlock", "token"},
                "DeleteKeyRequest": {"lock", "election", "semaphore", "rwlock", "token"}}
        for schema, members in sent.items():
            with self.subTest(schema=schema):
                self.assertEqual(set(self.schemas[schema]["properties"]), members)

    def test_every_schema_member_decodes_from_its_example(self):
        # A member of each mirrored schema, given as the API's example,
        # lands in the dataclass converted (durations to seconds, times to
        # datetimes), never dropped.
        for cls, schema in MIRRORS.items():
            props = self.schemas[schema]["properties"]
            doc = {k: p["example"] for k, p in props.items() if "example" in p}
            with self.subTest(cls=cls.__name__):
                v = baton.types.decode(cls, doc)
                for k in doc:
                    self.assertIsNotNone(getattr(v, k), k)


class DurationTest(unittest.TestCase):
    def test_go_durations_read_as_seconds(self):
        for s, want in [("30s", 30.0), ("1m30s", 90.0), ("1h0m0s", 3600.0), ("500ms", 0.5), ("1.5s", 1.5), ("0s", 0.0)]:
            self.assertEqual(baton.types.parse_duration(s), want, s)
        self.assertRaises(ValueError, baton.types.parse_duration, "30")

    def test_durations_are_written_as_go_reads_them(self):
        import datetime
        for d, want in [("1m", "1m"), (30, "30s"), (2.5, "2.5s"), (1e-5, "0.00001s"),
                        (datetime.timedelta(minutes=1), "60s")]:
            self.assertEqual(baton.types.format_duration(d), want)
        self.assertRaises(TypeError, baton.types.format_duration, True)


if __name__ == "__main__":
    unittest.main()
