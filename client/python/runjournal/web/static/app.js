// Live updates for the web inbox: the server sends the inbox snapshot {version, runs: {run_id: last_seq}}
// as server-sent events; a page fetches its own part again (#live, from data-fragment) when what it
// shows changed. A person's half-typed answer or reason is never replaced: the page says it changed.
"use strict";

(function () {
  const live = document.getElementById("live");
  const state = document.getElementById("live-state");
  if (!live || !window.EventSource) {
    return;
  }

  function root() {
    return live.querySelector(".live-root") || live;
  }

  function typing() {
    const fields = live.querySelectorAll("textarea, input[type=text]");
    return Array.from(fields).some((field) => field.value !== "" || field === document.activeElement);
  }

  // Whether the snapshot tells something the page does not show. A snapshot older than the page (the
  // feed may lag behind the listing the page was made from) changes nothing.
  function changed(snapshot) {
    const run = live.dataset.run;
    if (run) {
      const seq = snapshot.runs[run];
      if (seq === undefined) {
        return root().dataset.waiting === "1"; // it left the inbox: answered, decided or resumed
      }
      return seq > Number(root().dataset.seq);
    }
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

  async function refresh() {
    const response = await fetch(live.dataset.fragment, { credentials: "same-origin" });
    if (response.ok) {
      live.innerHTML = await response.text(); // our own server's escaped HTML
      live.dispatchEvent(new CustomEvent("refreshed"));
    }
  }

  function stale() {
    let note = document.getElementById("stale");
    if (!note) {
      note = document.createElement("p");
      note.id = "stale";
      note.className = "notice";
      note.textContent = "This has changed since the page was loaded: reload to see it.";
      live.before(note);
    }
  }

  const source = new EventSource("/events?after=" + encodeURIComponent(live.dataset.version || "0"));
  source.addEventListener("open", () => state && state.classList.add("on"));
  source.addEventListener("error", () => state && state.classList.remove("on"));
  source.addEventListener("inbox", (event) => {
    const snapshot = JSON.parse(event.data);
    if (!changed(snapshot)) {
      return;
    }
    if (typing()) {
      stale();
      return;
    }
    refresh();
  });
})();
