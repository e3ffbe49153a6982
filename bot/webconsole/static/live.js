// Pending approvals, live: fetch the list every second and merge it into the page.
// New cards are added, closed ones removed, the others left alone (a reply being typed
// survives). Ages and deadlines count on their own. Without this script the page works
// the same through its Refresh link and plain forms. No inline script: the console's
// Content-Security-Policy allows scripts from this origin only.
"use strict";

(function () {
  const POLL_MS = 1000;
  const list = document.getElementById("pending");
  const status = document.getElementById("live-status");
  if (!list) {
    return;
  }

  // The same shapes as the pages' (bot/webconsole/times.py): "3 min ago", "in 2 h 5 min",
  // and "2026-12-01 10:05:00 UTC" in the console's zone (data-zone, data-offset on <body>).
  function relative(seconds) {
    const ahead = seconds < 0;
    const s = Math.abs(Math.round(seconds));
    if (s < 1) {
      return "just now";
    }
    let amount;
    if (s < 60) {
      amount = s + " s";
    } else if (s < 3600) {
      amount = Math.floor(s / 60) + " min";
    } else if (s < 86400) {
      amount = Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
    } else {
      amount = Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
    }
    return ahead ? "in " + amount : amount + " ago";
  }

  function absolute(ms) {
    const offset = Number(document.body.dataset.offset || 0);
    const t = new Date(ms + offset * 1000);
    const two = (n) => String(n).padStart(2, "0");
    return (
      t.getUTCFullYear() + "-" + two(t.getUTCMonth() + 1) + "-" + two(t.getUTCDate()) + " " +
      two(t.getUTCHours()) + ":" + two(t.getUTCMinutes()) + ":" + two(t.getUTCSeconds()) + " " +
      (document.body.dataset.zone || "UTC")
    );
  }

  function tick() {
    const now = Date.now() / 1000;
    for (const el of list.querySelectorAll(".age[data-since]")) {
      el.textContent = "(" + relative(now - Number(el.dataset.since)) + ")";
    }
    for (const el of list.querySelectorAll(".left[data-until]")) {
      el.textContent = "(" + relative(now - Number(el.dataset.until)) + ")";
    }
    const empty = list.querySelector(".empty");
    if (empty) {
      empty.hidden = list.querySelector("article.approval") !== null;
    }
  }

  function merge(fresh) {
    const have = new Map();
    for (const el of list.querySelectorAll(":scope > article.approval")) {
      have.set(el.id, el);
    }
    const wanted = Array.from(fresh.querySelectorAll(":scope > article.approval"));
    const ids = new Set(wanted.map((el) => el.id));
    for (const [id, el] of have) {
      if (!ids.has(id)) {
        el.remove();
      }
    }
    let previous = list.querySelector(".empty");
    for (const el of wanted) {
      let current = have.get(el.id);
      if (!current) {
        current = document.importNode(el, true);
        list.insertBefore(current, previous ? previous.nextSibling : list.firstChild);
      } else {
        // a card already shown keeps what was typed in it; only the counts the reminder
        // sweep moves (reminders sent, escalated to) are brought up to date
        for (const field of [".reminders", ".escalated"]) {
          const now = el.querySelector(field);
          const shown = current.querySelector(field);
          if (now && shown && shown.textContent !== now.textContent) {
            shown.textContent = now.textContent;
          }
        }
      }
      previous = current;
    }
  }

  async function poll() {
    try {
      const answer = await fetch(list.dataset.poll, {
        credentials: "same-origin",
        cache: "no-store",
        redirect: "manual",
      });
      if (!answer.ok || answer.headers.get("X-Console-Fragment") !== "approvals") {
        status.textContent = "Live updates stopped (signed out?): reload the page.";
        return false;
      }
      const page = new DOMParser().parseFromString(await answer.text(), "text/html");
      const fresh = page.getElementById("pending");
      if (fresh) {
        merge(fresh);
      }
      status.textContent = "Live: updated " + absolute(Date.now()) + ".";
    } catch (error) {
      status.textContent = "Live updates paused (no answer); retrying.";
    }
    return true;
  }

  async function loop() {
    tick();
    if (await poll()) {
      tick();
      setTimeout(loop, POLL_MS);
    }
  }

  setInterval(tick, 1000);
  loop();
})();
