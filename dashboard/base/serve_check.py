"""``python -m dashboard.base.serve_check --host HOST``: may ``make run`` serve the dashboard there?

Loopback (``127.0.0.1``, ``::1``, ``localhost``) always may. Any other address (``0.0.0.0``,
a LAN address) needs a login: ``PRIVLAB_PASSWORD`` set, or Streamlit's OIDC login configured
(an ``[auth]`` section in ``.streamlit/secrets.toml``: the dashboard's, the working
directory's or ``~/.streamlit/``), unless the operator says ``INSECURE=1`` (or
``PRIVLAB_INSECURE=1``). Exit 0 to go on, 1 (one line on stderr) to refuse. Imports no
Streamlit: it runs before the server starts.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
import tomllib
from pathlib import Path

SECRETS = (Path(__file__).resolve().parents[1] / ".streamlit" / "secrets.toml",
           Path.cwd() / ".streamlit" / "secrets.toml",
           Path.home() / ".streamlit" / "secrets.toml")


def is_loopback(host: str | None) -> bool:
    """``127.0.0.0/8``, ``::1`` and ``localhost``; an empty or wildcard address is not."""
    if not host:
        return False
    h = host.strip().strip("[]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def oidc_in_secrets(paths: tuple[Path, ...] | None = None) -> bool:
    for p in SECRETS if paths is None else paths:
        try:
            with open(p, "rb") as fh:
                if isinstance(tomllib.load(fh).get("auth"), dict):
                    return True
        except (OSError, tomllib.TOMLDecodeError):
            continue
    return False


def decide(host: str, env: dict[str, str] | None = None) -> tuple[bool, str]:
    """(may serve, why)."""
    env = dict(os.environ) if env is None else env
    if is_loopback(host):
        return True, f"{host} is loopback"
    if env.get("PRIVLAB_PASSWORD"):
        return True, "PRIVLAB_PASSWORD is set: every session signs in first"
    if oidc_in_secrets():
        return True, "an OIDC login is configured in .streamlit/secrets.toml"
    if env.get("INSECURE") == "1" or env.get("PRIVLAB_INSECURE") == "1":
        return True, "INSECURE=1: serving without a login, as asked"
    return False, (f"make run: refusing to serve on {host or 'all interfaces'} without a login: "
                   "set PRIVLAB_PASSWORD=... (or an [auth] OIDC section in "
                   ".streamlit/secrets.toml), or say INSECURE=1 to serve it to the network "
                   "openly")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dashboard.base.serve_check")
    p.add_argument("--host", required=True)
    args = p.parse_args(argv)
    ok, why = decide(args.host)
    if not ok:
        print(why, file=sys.stderr)
        return 1
    if not is_loopback(args.host):
        print(f"make run: serving on {args.host}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
