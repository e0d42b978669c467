"""Take a lock, show its fencing token, and give it back.

    BATON_ADDR=http://127.0.0.1:8080 python3 take_a_lock.py [NAME]

CI runs it with the package installed from its wheel into a clean
virtual environment, against a node.
"""

import sys

import baton


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "example"
    c = baton.Client()
    with c.acquire(name, ttl="30s", owner="take-a-lock") as lk:
        print(f"{name}: token {lk.token}, from {baton.__file__}")


if __name__ == "__main__":
    main()
