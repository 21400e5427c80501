"""Runs scim2-tester (PyPI) against a SCIM 2.0 server and fails on any
check that neither succeeds nor is skipped.

    python check.py <base URL of /scim/v2> <bearer token>
"""

import sys

import httpx2
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import Status, check_server


def main() -> int:
    base, token = sys.argv[1], sys.argv[2]
    http = httpx2.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    results = check_server(SyncSCIMClient(http))
    failed = 0
    for result in results:
        print(f"{result.status.name:8} {result.title} {result.resource_type or ''}: {result.reason}")
        if result.status not in (Status.SUCCESS, Status.SKIPPED):
            failed += 1
    print(f"{len(results)} checks, {failed} failed")
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
