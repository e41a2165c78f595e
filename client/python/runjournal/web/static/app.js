// Live updates for the web inbox, by server-sent events. The inbox page listens to /events (the inbox
// snapshot {version, runs: {run_id: last_seq}}); a run page to /runs/RUN/events from the seq it shows
// ({seq} per record stored since, {left} where the server has no Watch). When what the page shows is
// out of date it fetches its own part again (#live, from data-fragment). A person's half-typed answer
// or reason is never replaced: the page says it changed instead.
"use strict";

(function () {
  const live = document.getElementById("live");
  const indicator = document.getElementById("live-state");
  if (!live || !window.EventSource) {
    return;
  }
  const run = live.dataset.run;
  let fetching = false;
  let again = false;

  function root() {
    return live.querySelector(".live-root") || live;
  }

  function typing() {
    const fields = live.querySelectorAll("textarea, input[type=text]");
    return Array.from(fields).some((field) => field.value !== "" || field === document.activeElement);
  }

  // Whether the inbox snapshot tells something the page does not show. A snapshot older than the page
  // (the feed may lag behind the listing the page was made from) changes nothing.
  function inboxChanged(snapshot) {
    const shown = {};
    live.querySelectorAll("tr.waiting").forEach((row) => {
      shown[row.dataset.run] = Number(row.dataset.seq);
    });
    const complete = root().dataset.truncated !== "1";
    for (const [id, seq] of Object.entries(snapshot.runs)) {
      if ((complete && !(id in shown)) || seq > shown[id]) {
        return true;
      }
    }
    return Object.keys(shown).some((id) => !(id in snapshot.runs));
  }

  function runChanged(news) {
    if (news.left) {
      return root().dataset.waiting === "1";
    }
    return news.seq > Number(root().dataset.seq);
  }

  function rowKey(row) {
    return [row.dataset.run, row.dataset.call, row.dataset.seq].join("\n");
  }

  // Our own server's escaped HTML replaces the part; on the inbox, a row that did not change is kept as
  // it is (the node itself), so a button a person is about to press does not vanish under the pointer.
  function show(html) {
    const fresh = document.createElement("div");
    fresh.innerHTML = html;
    if (!run) {
      const kept = new Map();
      live.querySelectorAll("tr.waiting").forEach((row) => kept.set(rowKey(row), row));
      fresh.querySelectorAll("tr.waiting").forEach((row) => {
        const old = kept.get(rowKey(row));
        if (old) {
          row.replaceWith(old);
        }
      });
    }
    live.replaceChildren(...fresh.childNodes);
  }

  async function refresh() {
    if (fetching) {
      again = true; // one more fetch after this one, however many events came meanwhile
      return;
    }
    fetching = true;
    try {
      const response = await fetch(live.dataset.fragment, { credentials: "same-origin" });
      if (response.ok) {
        show(await response.text());
      }
    } finally {
      fetching = false;
    }
    if (again) {
      again = false;
      refresh();
    }
  }

  function stale() {
    if (!document.getElementById("stale")) {
      const note = document.createElement("p");
      note.id = "stale";
      note.className = "notice";
      note.textContent = "This has changed since the page was loaded: reload to see it.";
      live.before(note);
    }
  }

  function update(isChanged) {
    if (!isChanged) {
      return;
    }
    if (typing()) {
      stale();
    } else {
      refresh();
    }
  }

  const url = run
    ? live.dataset.events + "?after=" + encodeURIComponent(root().dataset.seq)
    : "/events?after=" + encodeURIComponent(live.dataset.version || "0");
  const source = new EventSource(url);
  source.addEventListener("open", () => indicator && indicator.classList.add("on"));
  source.addEventListener("error", () => indicator && indicator.classList.remove("on"));
  source.addEventListener("inbox", (event) => update(inboxChanged(JSON.parse(event.data))));
  source.addEventListener("run", (event) => update(runChanged(JSON.parse(event.data))));
  source.addEventListener("gone", () => {
    source.close();
    indicator && indicator.classList.remove("on");
  });
})();
