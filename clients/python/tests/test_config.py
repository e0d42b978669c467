"""Client() reads the environment as the Go client does."""

import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import baton  # noqa: E402

CLEAN = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}


class ConfigTest(unittest.TestCase):
    def test_defaults_to_the_local_node(self):
        with mock.patch.dict(os.environ, CLEAN, clear=True):
            self.assertEqual(baton.Client().endpoints, ["http://127.0.0.1:8080"])

    def test_baton_addr_is_a_comma_separated_list_and_host_port_means_http(self):
        with mock.patch.dict(os.environ, {**CLEAN, "BATON_ADDR": " 10.0.0.1:8080, https://b.example/api/ ,"}, clear=True):
            self.assertEqual(baton.Client().endpoints, ["http://10.0.0.1:8080", "https://b.example:443/api"])

    def test_an_argument_wins_over_baton_addr(self):
        with mock.patch.dict(os.environ, {**CLEAN, "BATON_ADDR": "10.0.0.1:1"}, clear=True):
            self.assertEqual(baton.Client("127.0.0.1:9").endpoints, ["http://127.0.0.1:9"])

    def test_the_bearer_token_comes_from_baton_auth_token_then_baton_token_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".token") as f:
            f.write("  from-file\n")
            f.flush()
            env = {**CLEAN, "BATON_TOKEN_FILE": f.name}
            with mock.patch.dict(os.environ, env, clear=True):
                self.assertEqual(baton.Client()._t.headers(None)["Authorization"], "Bearer from-file")
            with mock.patch.dict(os.environ, {**env, "BATON_AUTH_TOKEN": "from-env"}, clear=True):
                self.assertEqual(baton.Client()._t.headers(None)["Authorization"], "Bearer from-env")

    def test_baton_token_is_never_the_credential(self):
        # baton exec hands its command the fencing token under that name.
        with mock.patch.dict(os.environ, {**CLEAN, "BATON_TOKEN": "4711"}, clear=True):
            self.assertNotIn("Authorization", baton.Client()._t.headers(None))

    def test_an_empty_token_file_or_a_bad_endpoint_is_refused(self):
        with tempfile.NamedTemporaryFile("w") as f:
            with mock.patch.dict(os.environ, {**CLEAN, "BATON_TOKEN_FILE": f.name}, clear=True):
                self.assertRaises(ValueError, baton.Client)
        self.assertRaises(ValueError, baton.Client, "ftp://x:1")
        self.assertRaises(ValueError, baton.Client, "http://x:1/?q=1")


if __name__ == "__main__":
    unittest.main()
