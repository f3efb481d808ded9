// The runs list: every run with its status, phase, iteration and latest held-out pass rate,
// kept current by polling for runs changed since the last answer's cursor.

import {getJSON, Poller} from "../api.js";
import {emptyState, fill, h, link, pct, statusBadge, when} from "../dom.js";

export function mount(container, route, ui) {
  const runs = new Map();
  let cursor = null, etag = null, loaded = false;
  const selected = new Set();
  const query = route.params.get("q") || "";

  const search = h("input", {type: "search", placeholder: "filter by name, tag, status", value: query,
                             "aria-label": "filter runs"});
  search.addEventListener("input", () => {
    history.replaceState(null, "", link("/", {q: search.value}));
    render();
  });
  const compareButton = h("button", {type: "button", disabled: true,
                                     onclick: () => ui.go("/compare", {runs: [...selected].join(",")})}, "Compare selected");
  const body = h("div", {id: "runs"});
  container.append(h("section", {class: "card"},
    h("div", {class: "card-head"}, h("h1", {}, "Runs"), h("div", {class: "tools"}, search, compareButton)), body));

  function matches(run, text) {
    const haystack = [run.name, run.status, run.phase_label, ...run.tags].join(" ").toLowerCase();
    return text.toLowerCase().split(/\s+/).every(word => haystack.includes(word));
  }

  function render() {
    if (!loaded) return;
    const rows = [...runs.values()].filter(run => matches(run, search.value))
      .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id - a.id);
    compareButton.disabled = selected.size < 1;
    compareButton.textContent = selected.size ? `Compare selected (${selected.size})` : "Compare selected";
    if (!runs.size) {
      fill(body, emptyState("No runs yet.",
        "A run appears here as soon as a trainer creates it (POST /runs); this page updates by itself."));
      return;
    }
    if (!rows.length) {
      fill(body, emptyState(`No run matches “${search.value}”.`));
      return;
    }
    fill(body, h("div", {class: "scroll"}, h("table", {class: "runs"},
      h("thead", {}, h("tr", {}, ["", "run", "status", "rung / phase", "iteration", "latest held-out", "turn-1", "started", "tags"]
        .map(title => h("th", {class: ["iteration", "latest held-out", "turn-1"].includes(title) ? "num" : null}, title)))),
      h("tbody", {}, rows.map(run => {
        const box = h("input", {type: "checkbox", "aria-label": `select ${run.name}`, checked: selected.has(run.id)});
        box.addEventListener("change", () => {
          box.checked ? selected.add(run.id) : selected.delete(run.id);
          render();
        });
        const latest = run.latest_eval;
        return h("tr", {"data-run": run.id},
          h("td", {}, box),
          h("td", {class: "name"}, h("a", {href: link(`/run/${run.id}`)}, run.name)),
          h("td", {}, statusBadge(run.status)),
          h("td", {class: "phase", title: run.phase_label}, run.phase_label || "—"),
          h("td", {class: "num", "data-col": "iteration"}, run.iteration ?? "—"),
          h("td", {class: "num", "data-col": "pass"}, latest ? h("span", {}, h("b", {}, pct(latest.pass_rate)),
                                                              h("span", {class: "muted"}, ` @ ${latest.iteration}`)) : "—"),
          h("td", {class: "num"}, latest ? pct(latest.turn1_rate) : "—"),
          h("td", {title: run.created_at}, when(run.created_at)),
          h("td", {}, run.tags.map(tag => h("span", {class: "tag"}, tag))));
      })))));
  }

  async function step() {
    const params = new URLSearchParams(cursor ? {changed_after: cursor} : {});
    const answer = await getJSON(`/api/dashboard/runs?${params}`, etag);
    if (!answer.notModified) {
      etag = answer.etag;
      for (const run of answer.body.items) {
        if (!runs.has(run.id) || runs.get(run.id).version <= run.version) runs.set(run.id, run);
      }
      cursor = answer.body.cursor ?? cursor;
      loaded = true;
      render();
      poll = answer.body.poll_s;
    }
    return poll;
  }

  let poll = 5;
  const poller = new Poller(step, {
    onOk: () => { ui.error(null); ui.live("ok", `live · every ${poll} s`); },
    onError: (error, wait) => {
      ui.live("error", "offline");
      if (!loaded) fill(body, emptyState("Cannot load the runs.", `${error.message}. Retrying in ${wait} s.`));
      else ui.error(`Live updates paused: ${error.message}. Retrying in ${wait} s.`);
    },
  }).start();
  return {stop: () => poller.stop()};
}
