"""``hatchway web login-link USER``: a console sign-in link, printed at the host.

For an operator at the host's console (no chat needed): the link is written to the database
(its digest only) and printed; it signs in once, within ``web.link_ttl_s``, as ``USER``, an
identity (``telegram:12345``) or a name from ``web.names``. ``USER`` must be able to use the
console (an approver of a channel alias, or in ``web.admins``): a link for anyone else would
only lead to the refusal page.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from bot.commands.operator import operator_name, operator_store, when


def register(subparsers: Any) -> None:
    from bot.cli import add_config_argument

    parser = subparsers.add_parser("web", help="the admin web console")
    sub = parser.add_subparsers(dest="web_command", metavar="ACTION", required=True)
    link = sub.add_parser(
        "login-link", help="print a one-time sign-in link for USER (telegram:ID, or a name)"
    )
    link.add_argument("user", metavar="USER")
    add_config_argument(link)
    link.set_defaults(handler=_login_link)


async def _login_link(args: argparse.Namespace) -> int:
    import structlog

    from bot.config.web import check_identity
    from bot.webconsole.links import issue, server_origin
    from bot.webconsole.viewer import Identity, eligible

    async with operator_store(args) as (settings, store):
        web = settings.web
        text = web.names.get(args.user, args.user)
        try:
            identity = Identity.parse(check_identity(text))
        except ValueError as exc:
            print(f"hatchway: {exc}, or a name from web.names", file=sys.stderr)
            return 2
        if not eligible(settings, identity):
            print(
                f"hatchway: {identity} may not use the console: it is not an approver of any "
                "enabled channel nor in web.admins",
                file=sys.stderr,
            )
            return 1
        if not web.public_url and settings.server.port == 0:
            print(
                "hatchway: [server] port is 0 (chosen at start): set web.public_url so the "
                "link says where the console is",
                file=sys.stderr,
            )
            return 1
        link = await issue(
            store.web,
            identity,
            origin=server_origin(settings),
            ttl_s=web.link_ttl_s,
            now=time.time(),
        )
    structlog.get_logger(__name__).info(
        "web_login_link_printed", identity=str(identity), operator=operator_name()
    )
    if not web.enabled:
        print(
            "note: [web] enabled is false: the daemon does not serve the console", file=sys.stderr
        )
    print(link.url)
    print(f"signs in once as {identity}, until {when(link.expires_at)}", file=sys.stderr)
    return 0
