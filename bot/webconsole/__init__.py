"""The admin web console: server-rendered pages on the daemon's HTTP server, under ``/console/``.

A browser signs in as a platform identity (a one-time link or code sent to that user's DM by
the bot, :mod:`~bot.webconsole.sign_in`), so the chat's approver rules apply unchanged:
approvers of a channel alias see and decide its calls, ``web.admins`` read everything
(:mod:`~bot.webconsole.viewer`). The parts:

* :mod:`~bot.webconsole.console`: :class:`Console`, the sub-application, its page list and its
  task; :mod:`~bot.webconsole.host`: what it reads of the running bot (:class:`ConsoleHost`);
* :mod:`~bot.webconsole.security`: response headers (strict CSP), the session, CSRF on POST;
* :mod:`~bot.webconsole.sessions`, :mod:`~bot.webconsole.tokens`,
  :mod:`~bot.webconsole.links`, :mod:`~bot.webconsole.mailer`: signing in;
* :mod:`~bot.webconsole.pages`: adding a page with the role it needs (read this first to
  write one); :mod:`~bot.webconsole.approvals`: the Pending approvals page;
* ``templates/`` (jinja2, autoescaped) and ``static/`` (the stylesheet and ``live.js``).

See docs/console.md.
"""

from bot.webconsole.console import Console
from bot.webconsole.host import ConsoleHost

__all__ = ["Console", "ConsoleHost"]
