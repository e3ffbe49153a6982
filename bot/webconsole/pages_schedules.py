"""The Schedules page (admins): every scheduled job, and pause, resume and remove.

Jobs are read and changed through :class:`bot.schedules.book.ScheduleBook`, as the chat's
schedule tools and ``hatchway schedules`` do. A paused job keeps its next run and does not
come due; resuming it continues from now (runs missed while it was paused are skipped, not
caught up); a one-shot job whose time passed while it was paused cannot resume and is
removed instead. A job's prompt and names were written in chat: they are shown scrubbed, with
invisible characters visible.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import structlog
from aiohttp import web

from bot.schedules.book import ScheduleBook
from bot.schedules.job import DeliveryMode, ScheduledJob, ScheduleError
from bot.webconsole import display
from bot.webconsole.notices import done, notice
from bot.webconsole.pages import Access, PageRequest, Pages

log = structlog.get_logger(__name__)

PATH = "/schedules"
MAX_JOB_ID = 64
_DONE = {
    "paused": "Job {ref} paused: it does not run until resumed.",
    "resumed": "Job {ref} resumed: it runs next at its next time from now.",
    "removed": "Job {ref} removed.",
    "unchanged": "Job {ref} was not in a state for that; nothing changed.",
    "passed": "Job {ref} was to run once, at a time that passed while it was paused: "
    "remove it instead.",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class JobRow:
    id: str
    name: str
    state: str
    when: str
    next_run: str
    last_run: str
    origin: str
    creator: str
    delivery: str
    prompt: str


def _state(job: ScheduledJob) -> str:
    if job.enabled:
        return "active"
    return "paused" if job.paused else "finished"


def _row(job: ScheduledJob) -> JobRow:
    spec = job.spec
    origin = f"{spec.origin.channel} · {spec.origin.conversation_id}"
    if spec.origin.thread_id:
        origin += f" · thread {spec.origin.thread_id}"
    creator = display.text(spec.creator_name)
    creator_id = display.text(spec.creator_id)
    target = f"{spec.target.channel} · {spec.target.conversation_id}"
    return JobRow(
        id=job.id,
        name=display.text(spec.name, 100),
        state=_state(job),
        when=display.text(spec.when()),
        next_run=display.when(job.next_run_at) if job.enabled else "—",
        last_run=display.when(job.last_run_at),
        origin=display.text(origin, 300),
        creator=f"{creator} ({creator_id})" if creator else creator_id,
        delivery="nowhere (recorded only)"
        if spec.delivery is DeliveryMode.NONE
        else display.text(target, 300),
        prompt=display.block(spec.prompt, 600),
    )


def register(pages: Pages) -> None:
    pages.add("GET", PATH, schedules_page, access=Access.ADMIN, nav="Schedules")
    for action in ("pause", "resume", "remove"):
        pages.add("POST", f"{PATH}/{{job_id}}/{action}", change_job, access=Access.ADMIN)


def _book(page: PageRequest) -> ScheduleBook:
    return ScheduleBook(page.host.store.schedules)


async def schedules_page(page: PageRequest) -> web.StreamResponse:
    jobs = [_row(j) for j in await _book(page).jobs()]
    order = {"active": 0, "paused": 1, "finished": 2}
    context: dict[str, Any] = {
        "jobs": sorted(jobs, key=lambda j: order[j.state]),
        "done": notice(page.request, _DONE),
        "path": PATH,
    }
    return page.render("schedules.html", context)


async def change_job(page: PageRequest) -> web.StreamResponse:
    job_id = page.request.match_info["job_id"]
    if not job_id or len(job_id) > MAX_JOB_ID:
        raise web.HTTPNotFound(text="no such job")
    action = page.request.path.rsplit("/", 1)[-1]
    book = _book(page)
    by = str(page.viewer.identity)
    if action == "pause":
        changed = await book.pause(job_id)
        what = "paused" if changed else "unchanged"
    elif action == "resume":
        try:
            resumed = await book.resume(job_id, now=time.time())
        except ScheduleError:
            return done(PATH, "passed", job_id)
        what = "resumed" if resumed is not None else "unchanged"
    else:
        what = "removed" if await book.remove(job_id) else "unchanged"
    if what != "unchanged":
        log.info("schedule_changed_from_web", job_id=job_id, action=what, by=by)
    return done(PATH, what, job_id)
