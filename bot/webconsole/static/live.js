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

  function duration(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) {
      return s + " s";
    }
    const m = Math.floor(s / 60);
    return m < 60 ? m + " min " + (s % 60) + " s" : Math.floor(m / 60) + " h " + (m % 60) + " min";
  }

  function tick() {
    const now = Date.now() / 1000;
    for (const el of list.querySelectorAll(".age[data-since]")) {
      el.textContent = "(" + duration(now - Number(el.dataset.since)) + " ago)";
    }
    for (const el of list.querySelectorAll(".left[data-until]")) {
      el.textContent = "(in " + duration(Number(el.dataset.until) - now) + ")";
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
      status.textContent = "Live: updated " + new Date().toLocaleTimeString() + ".";
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
