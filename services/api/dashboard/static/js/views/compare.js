// Several runs on one chart and in one table, the table as results pages write it:
// "| 19 | 53.3% (p@4 73%) | 52.5% (phase 0 · m0; p@4 70%) |", exported as Markdown or CSV.
// Each run has its own RunFeed, so a live update fetches only that run's new rows.

import {getJSON, Poller, RunFeed} from "../api.js";
import {COLORS, lineChart} from "../chart.js";
import {emptyState, fill, h, link, pct} from "../dom.js";

export function mount(container, route, ui) {
  const ids = (route.params.get("runs") || "").split(",").map(Number).filter(Boolean);
  const k = Number(route.params.get("k") || 4);
  const feeds = ids.map(id => new RunFeed(id, [1, k], {compact: true}));
  const picker = h("div", {class: "picker"});
  const chartBox = h("div", {}), tableBox = h("div", {});
  container.append(h("section", {class: "card"},
    h("div", {class: "card-head"}, h("h1", {}, "Compare runs"),
      h("label", {class: "tools"}, "pass@",
        h("select", {"aria-label": "k", onchange: event => ui.go("/compare", {runs: ids.join(","), k: event.target.value})},
          [2, 4, 8, 16].map(v => h("option", {value: v, selected: v === k}, v))))),
    picker, chartBox, tableBox));

  getJSON("/api/dashboard/runs").then(({body}) => {
    const all = body.items.sort((a, b) => a.name.localeCompare(b.name));
    fill(picker, all.length ? h("span", {class: "muted"}, "runs: ") : "No runs yet.",
      all.map(run => h("label", {class: "pick"},
        h("input", {type: "checkbox", checked: ids.includes(run.id), "data-run": run.id, onchange: event => {
          const chosen = event.target.checked ? [...ids, run.id] : ids.filter(id => id !== run.id);
          ui.go("/compare", {runs: chosen.join(","), k});
        }}), run.name)));
  }).catch(error => fill(picker, `Cannot list the runs: ${error.message}`));

  if (!ids.length) {
    chartBox.append(emptyState("Pick runs to compare.", "Tick them above, or in the runs list."));
    return {stop() {}};
  }

  /** Rows of the trajectory table: one per eval iteration of any run, a cell per run. */
  function tableRows() {
    const iterations = [...new Set(feeds.flatMap(feed => [...feed.evals.keys()]))].sort((a, b) => a - b);
    return iterations.map(iteration => ({iteration, cells: feeds.map(feed => {
      const point = feed.evals.get(iteration);
      if (!point) return null;
      const phases = new Set(feed.phases.map(band => band.label));
      return {point, phase: phases.size > 1 ? feed.phaseAt(iteration) : null, passK: point.pass_at_k[k]};
    })}));
  }

  function cellText(cell) {
    if (!cell) return "—";
    const extra = [cell.phase, cell.passK === null || cell.passK === undefined ? null : `p@${k} ${pct(cell.passK, 0)}`]
      .filter(Boolean).join("; ");
    return `${pct(cell.point.pass_rate)}${extra ? ` (${extra})` : ""}`;
  }

  function markdown() {
    const names = feeds.map(feed => feed.run?.name ?? `run ${feed.runId}`);
    return [`| iter | ${names.join(" | ")} |`, `|${"---|".repeat(names.length + 1)}`,
            ...tableRows().map(row => `| ${row.iteration} | ${row.cells.map(cellText).join(" | ")} |`)].join("\n") + "\n";
  }

  function csv() {
    const quote = value => /[",\n]/.test(String(value)) ? `"${String(value).replaceAll('"', '""')}"` : String(value);
    const lines = [["iteration", "run", "phase", "pass_rate", "turn1_rate", `pass_at_${k}`, "tasks", "episodes"]];
    for (const row of tableRows()) {
      row.cells.forEach((cell, i) => {
        if (!cell) return;
        const feed = feeds[i], p = cell.point;
        lines.push([row.iteration, feed.run.name, feed.phaseAt(row.iteration) ?? "", p.pass_rate ?? "", p.turn1_rate ?? "",
                    cell.passK ?? "", p.tasks, p.episodes]);
      });
    }
    return lines.map(line => line.map(quote).join(",")).join("\n") + "\n";
  }

  function download(text, type, extension) {
    const anchor = h("a", {href: URL.createObjectURL(new Blob([text], {type})),
                           download: `compare-${feeds.map(feed => feed.run?.name ?? feed.runId).join("-vs-")}.${extension}`});
    document.body.append(anchor);
    anchor.click();
    anchor.remove();
    setTimeout(() => URL.revokeObjectURL(anchor.href), 1000);
  }

  function render() {
    const ready = feeds.filter(feed => feed.loaded);
    if (!ready.length) return;
    const series = ready.flatMap((feed, i) => [
      {key: `run-${feed.runId}`, label: feed.run.name, color: COLORS[i % COLORS.length],
       points: feed.sortedEvals().map(p => ({x: p.iteration, y: p.pass_rate}))},
      {key: `run-${feed.runId}-pass-at-k`, label: `${feed.run.name} pass@${k}`, color: COLORS[i % COLORS.length], dashed: true,
       dots: false, points: feed.sortedEvals().map(p => ({x: p.iteration, y: p.pass_at_k[k] ?? null}))},
    ]);
    fill(chartBox, h("h2", {}, `Held-out pass rate (solid) and pass@${k} (dashed)`),
      lineChart({id: "compare-chart", series, yMax: 1, yFormat: v => pct(v, 0), emptyText: "None of these runs has a held-out eval yet."}));
    const rows = tableRows();
    fill(tableBox,
      h("div", {class: "card-head"}, h("h2", {}, "Trajectory table"),
        h("div", {class: "tools"},
          h("button", {type: "button", id: "export-md", onclick: () => download(markdown(), "text/markdown", "md")}, "Export Markdown"),
          h("button", {type: "button", id: "export-csv", onclick: () => download(csv(), "text/csv", "csv")}, "Export CSV"))),
      rows.length ? h("div", {class: "scroll tall"}, h("table", {class: "compare"},
        h("thead", {}, h("tr", {}, h("th", {}, "iter"), feeds.map(feed => h("th", {},
          h("a", {href: link(`/run/${feed.runId}`)}, feed.run?.name ?? `run ${feed.runId}`))))),
        h("tbody", {}, rows.map(row => h("tr", {"data-iteration": row.iteration}, h("td", {class: "num"}, row.iteration),
          row.cells.map((cell, i) => h("td", {"data-run": feeds[i].runId}, cell
            ? h("a", {href: link(`/run/${feeds[i].runId}/transcripts`, {split: "heldout", iteration: row.iteration})}, cellText(cell))
            : "—"))))))) : emptyState("No held-out evals yet."),
      h("details", {}, h("summary", {}, "Markdown"), h("pre", {id: "markdown"}, markdown())));
  }

  const poller = new Poller(async () => {
    const changed = await Promise.all(feeds.map(feed => feed.refresh()));
    if (changed.some(Boolean)) render();
    return Math.min(...feeds.map(feed => feed.pollS));
  }, {
    onOk: () => { ui.error(null); ui.live("ok", `live · ${feeds.length} runs`); },
    onError: (error, wait) => {
      ui.live("error", "offline");
      ui.error(error.status === 404 ? `${error.message}: remove it from the comparison.`
                                    : `Live updates paused: ${error.message}. Retrying in ${wait} s.`);
    },
  }).start();
  return {stop: () => poller.stop()};
}
