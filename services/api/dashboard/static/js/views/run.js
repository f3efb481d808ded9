// One run: held-out trajectory (phases marked), training reward and the share of groups with a
// gradient (dead iterations marked), per-family results at each eval, timings, config. Live: the
// RunFeed asks for what changed since its version and cursor, at the pace the server sets.

import {Poller, RunFeed} from "../api.js";
import {COLORS, lineChart} from "../chart.js";
import {emptyState, fill, h, link, num, pct, seconds, statusBadge, when} from "../dom.js";

const TIMINGS = [["time_sampling_s", "sampling"], ["time_grading_s", "grading"], ["time_training_s", "training"],
                 ["time_sync_s", "adapter sync"]];

export function mount(container, route, ui) {
  const [runId] = route.ids;
  const ks = (route.params.get("k") || "1,4,8").split(",").map(Number).filter(k => k >= 1);
  const feed = new RunFeed(runId, ks);
  const sections = Object.fromEntries(["head", "trajectory", "training", "families", "timings", "config"]
    .map(name => [name, h("section", {class: "card", id: `section-${name}`})]));
  container.append(h("p", {class: "empty"}, "Loading the run…"));

  const transcripts = params => link(`/run/${runId}/transcripts`, params);

  function render() {
    if (!container.querySelector("#section-head")) fill(container, ...Object.values(sections));
    const run = feed.run, evals = feed.sortedEvals(), iterations = feed.sortedIterations();
    const lastIteration = iterations.length ? iterations[iterations.length - 1].iteration : null;
    fill(sections.head,
      h("div", {class: "card-head"},
        h("h1", {}, h("a", {href: "#/", class: "crumb"}, "Runs"), " / ", h("span", {id: "run-name"}, run.name)),
        h("div", {class: "tools"},
          h("a", {class: "button", href: transcripts({})}, "Transcripts"),
          h("a", {class: "button", href: link("/compare", {runs: runId})}, "Compare…"))),
      h("dl", {class: "facts"},
        fact("status", statusBadge(run.status)), fact("rung / phase", run.phase_label || "—"),
        fact("iteration", lastIteration ?? "—"), fact("evals", evals.length),
        fact("started", h("span", {title: run.created_at}, when(run.created_at))),
        fact("tags", run.tags.length ? run.tags.map(tag => h("span", {class: "tag"}, tag)) : "—")));
    renderTrajectory(evals);
    renderTraining(iterations);
    renderFamilies(evals);
    renderTimings(iterations);
    fill(sections.config, h("details", {},
      h("summary", {}, h("h2", {}, "Config")), h("pre", {class: "config"}, JSON.stringify(run.config, null, 2))));
  }

  function renderTrajectory(evals) {
    const passKs = feed.passKs();
    const series = [
      {key: "pass_rate", label: "pass rate (all turns)", color: COLORS[0], points: evals.map(p => ({x: p.iteration, y: p.pass_rate}))},
      {key: "turn1_rate", label: "turn-1 rate", color: COLORS[1], points: evals.map(p => ({x: p.iteration, y: p.turn1_rate}))},
      ...passKs.map((k, i) => ({key: `pass_at_${k}`, label: `pass@${k}`, color: COLORS[2 + i], dashed: true,
                                points: evals.map(p => ({x: p.iteration, y: p.pass_at_k[k]}))})),
    ];
    const chart = lineChart({id: "trajectory", series, bands: feed.phases, yMax: 1, yFormat: v => pct(v, 0),
                             emptyText: "No held-out evals yet: they appear here as the trainer posts them.",
                             onPoint: (_, p) => ui.go(`/run/${runId}/transcripts`, {split: "heldout", iteration: p.x})});
    const table = evals.length ? h("div", {class: "scroll tall"}, h("table", {class: "evals"},
      h("thead", {}, h("tr", {}, ["iter", "phase", "pass rate", "turn-1", ...passKs.map(k => `pass@${k}`), "tasks", "episodes", ""]
        .map(title => h("th", {}, title)))),
      h("tbody", {}, evals.map(p => h("tr", {"data-iteration": p.iteration},
        h("td", {class: "num"}, p.iteration),
        h("td", {class: "phase"}, feed.phaseAt(p.iteration) ?? "—"),
        h("td", {class: "num", "data-col": "pass_rate"}, h("b", {}, pct(p.pass_rate))),
        h("td", {class: "num", "data-col": "turn1_rate"}, pct(p.turn1_rate)),
        passKs.map(k => h("td", {class: "num", "data-col": `pass_at_${k}`}, pct(p.pass_at_k[k]))),
        h("td", {class: "num"}, p.tasks), h("td", {class: "num"}, p.episodes),
        h("td", {}, h("a", {href: transcripts({split: "heldout", iteration: p.iteration})}, "transcripts"))))))) : null;
    fill(sections.trajectory, h("h2", {}, "Held-out trajectory"), chart, table);
  }

  function renderTraining(iterations) {
    const dead = iterations.filter(isDead);
    const series = [
      {key: "train_reward", label: "train reward", color: COLORS[0], dots: iterations.length <= 150,
       points: iterations.map(r => ({x: r.iteration, y: r.train_reward}))},
      {key: "signal_share", label: "share of groups with gradient", color: COLORS[2], dots: iterations.length <= 150,
       points: iterations.map(r => ({x: r.iteration, y: r.groups ? r.groups_with_signal / r.groups : null, alert: isDead(r),
                                     note: r.groups ? `${r.groups_with_signal}/${r.groups} groups` : ""}))},
    ];
    const marks = dead.map(r => ({x: r.iteration, title: `iteration ${r.iteration}: dead (no group had a gradient)`}));
    fill(sections.training,
      h("div", {class: "card-head"}, h("h2", {}, "Training"),
        h("span", {class: dead.length ? "pill alert" : "pill", id: "dead-count"},
          `${dead.length} dead iteration${dead.length === 1 ? "" : "s"} of ${iterations.length}`)),
      lineChart({id: "training", series, marks, bands: feed.phases, yMax: 1, yFormat: v => pct(v, 0),
                 emptyText: "No training iterations recorded yet."}));
  }

  function renderFamilies(evals) {
    const families = [...new Set(evals.flatMap(p => Object.keys(p.families)))].sort();
    if (!families.length) {
      fill(sections.families, h("h2", {}, "Per family"), emptyState("No held-out evals yet."));
      return;
    }
    const cell = (summary, params) => {
      if (!summary) return h("td", {class: "num muted"}, "—");
      const passed = Math.round(summary.pass_rate * summary.episodes);
      return h("td", {class: "num cell", style: `--rate:${summary.pass_rate}`, "data-rate": summary.pass_rate,
                      title: `pass ${pct(summary.pass_rate)} · turn-1 ${pct(summary.turn1_rate)} · ${summary.tasks} tasks`},
        h("a", {href: transcripts(params)}, `${passed}/${summary.episodes}`));
    };
    const scroller = h("div", {class: "scroll"}, h("table", {class: "families"},
      h("thead", {}, h("tr", {}, h("th", {class: "sticky"}, "family \\ iter"),
        evals.map(p => h("th", {class: "num"}, h("a", {href: transcripts({split: "heldout", iteration: p.iteration})}, p.iteration))))),
      h("tbody", {},
        families.map(family => h("tr", {"data-family": family},
          h("th", {class: "sticky"}, h("a", {href: transcripts({split: "heldout", family})}, family || "(none)")),
          evals.map(p => cell(p.families[family], {split: "heldout", iteration: p.iteration, family})))),
        h("tr", {class: "total", "data-family": ""}, h("th", {class: "sticky"}, "all"),
          evals.map(p => cell(p, {split: "heldout", iteration: p.iteration}))))));
    fill(sections.families, h("h2", {}, "Per family (solved / episodes)"), scroller);
    scroller.scrollLeft = scroller.scrollWidth;  // the latest eval first in view
  }

  function renderTimings(iterations) {
    const present = TIMINGS.filter(([key]) => iterations.some(r => r[key] !== undefined));
    const timed = key => iterations.filter(r => typeof r[key] === "number");
    const mean = key => timed(key).slice(-10).reduce((sum, r) => sum + r[key], 0) / (timed(key).slice(-10).length || 1);
    const total = key => timed(key).reduce((sum, r) => sum + r[key], 0);
    fill(sections.timings, h("h2", {}, "Timings per iteration"),
      lineChart({id: "timings", bands: feed.phases, yFormat: v => `${+v.toFixed(1)} s`,
                 emptyText: "No timings recorded yet.",
                 series: present.map(([key, label], i) => ({key, label, color: COLORS[i], dots: iterations.length <= 150,
                                                            points: iterations.map(r => ({x: r.iteration, y: r[key] ?? null}))}))}),
      present.length ? h("table", {class: "compact"},
        h("thead", {}, h("tr", {}, h("th", {}, ""), present.map(([, label]) => h("th", {class: "num"}, label)))),
        h("tbody", {},
          h("tr", {}, h("th", {}, "mean, last 10"), present.map(([key]) => h("td", {class: "num"}, seconds(mean(key))))),
          h("tr", {}, h("th", {}, "total"), present.map(([key]) => h("td", {class: "num"}, seconds(total(key))))))) : null);
  }

  const poller = new Poller(async () => {
    if (await feed.refresh()) render();
    return feed.pollS;
  }, {
    onOk: () => { ui.error(null); ui.live("ok", `live · v${feed.version} · every ${feed.pollS} s`); },
    onError: (error, wait) => {
      ui.live("error", "offline");
      if (error.status === 404) {
        poller.stop();
        fill(container, emptyState(`No run ${runId}.`, h("a", {href: "#/"}, "Back to the runs")));
      } else if (!feed.loaded) {
        fill(container, emptyState("Cannot load the run.", `${error.message}. Retrying in ${wait} s.`));
      } else {
        ui.error(`Live updates paused: ${error.message}. Retrying in ${wait} s.`);
      }
    },
  }).start();
  return {stop: () => poller.stop()};
}

function isDead(row) {
  return row.dead === true || (row.groups > 0 && row.groups_with_signal === 0);
}

function fact(name, value) {
  return h("div", {}, h("dt", {}, name), h("dd", {}, value));
}
