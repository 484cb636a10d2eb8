"""Container health check for the API (docker-compose): GET /api/health/ on this host.

Sends the first ALLOWED_HOSTS name as the Host header, since Django refuses other hosts in
production, and X-Forwarded-Proto: https, as the TLS-terminating proxy would. Exit status 0
when the API answers 200 (database reachable, migrations applied), 1 otherwise.
Standard library only: it runs every few seconds and must start fast.
"""
import os
import sys
import urllib.error
import urllib.request


def host_header(allowed_hosts: str) -> str:
    for name in allowed_hosts.split(","):
        name = name.strip()
        if name and name != "*":
            return name.lstrip(".")  # ".example.com" allows example.com itself
    return "localhost"


def main() -> int:
    request = urllib.request.Request(
        "http://127.0.0.1:8000/api/health/",  # the container port of docker-compose.yml
        headers={"Host": host_header(os.environ.get("ALLOWED_HOSTS", "")),
                 "X-Forwarded-Proto": "https"},
    )
    try:
        with urllib.request.urlopen(request, timeout=3) as response:
            return 0 if response.status == 200 else 1
    except (urllib.error.URLError, OSError) as exc:
        print(f"unhealthy: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
