// The dashboard's router: the hash names the view and its filters (#/run/3/transcripts?family=x),
// so every state of the page is a link. A view is mount(container, route, ui) -> {stop()}.

import {fill, h, link} from "./dom.js";
import * as compare from "./views/compare.js";
import * as run from "./views/run.js";
import * as runs from "./views/runs.js";
import * as transcripts from "./views/transcripts.js";

const ROUTES = [
  [/^\/?$/, runs, "runs"],
  [/^\/run\/(\d+)\/transcripts$/, transcripts, "runs"],
  [/^\/run\/(\d+)$/, run, "runs"],
  [/^\/compare$/, compare, "compare"],
];

const live = document.getElementById("live");
const banner = document.getElementById("banner");

/** What a view may do to the page around it. */
const ui = {
  live(state, text) {
    live.className = `live live-${state}`;
    live.textContent = text;
  },
  error(message) {
    banner.hidden = !message;
    banner.textContent = message || "";
  },
  go(path, params) {
    location.hash = link(path, params);
  },
};

let current = null;

function route() {
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  current?.stop();
  ui.error(null);
  ui.live("idle", "");
  const view = document.getElementById("view");
  fill(view);
  for (const [pattern, module, nav] of ROUTES) {
    const match = pattern.exec(path || "/");
    if (!match) continue;
    document.querySelectorAll("[data-nav]").forEach(a => a.classList.toggle("active", a.dataset.nav === nav));
    current = module.mount(view, {params: new URLSearchParams(query), ids: match.slice(1).map(Number)}, ui);
    return;
  }
  current = null;
  view.append(h("div", {class: "empty"}, h("p", {class: "empty-title"}, "No such page"),
                h("p", {}, h("a", {href: "#/"}, "Back to the runs"))));
}

window.addEventListener("hashchange", route);
route();
