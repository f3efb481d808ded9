// A small SVG line chart: numeric x (iterations), several series, shaded x-ranges (phases),
// tick marks along the bottom (dead iterations), clickable points. Each point carries its
// series and values as data attributes, so what is drawn can be read back exactly.

import {h, s} from "./dom.js";

export const COLORS = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#dc2626", "#0891b2", "#ca8a04",
                       "#db2777", "#4b5563", "#65a30d"];

const W = 900, H = 280, M = {top: 24, right: 16, bottom: 36, left: 56};

function niceStep(span, count) {
  const raw = span / count, power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map(f => f * power).find(step => step >= raw) ?? 10 * power;
}

/**
 * lineChart({id, series: [{key, label, color, points: [{x, y, meta}], dashed, dots}],
 *            bands: [{from, to, label}], marks: [{x, title}], yMax, yFormat, xLabel, onPoint})
 * Returns a <figure>. `yMax` fixes the top (1 for rates); otherwise it follows the data.
 */
export function lineChart({id, series, bands = [], marks = [], yMax = null, yFormat = v => v, xLabel = "iteration",
                           onPoint = null, emptyText = "no data yet"}) {
  const points = series.flatMap(line => line.points.filter(p => p.y !== null && p.y !== undefined));
  const figure = h("figure", {class: "chart", id});
  if (!points.length && !marks.length) {
    figure.append(h("div", {class: "chart-empty"}, emptyText));
    return figure;
  }
  const xs = [...points.map(p => p.x), ...marks.map(m => m.x), ...bands.flatMap(b => [b.from, b.to])];
  let x0 = Math.min(...xs), x1 = Math.max(...xs);
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  const top = yMax ?? (Math.max(...points.map(p => p.y), 0) * 1.1 || 1);
  const x = v => M.left + (v - x0) / (x1 - x0) * (W - M.left - M.right);
  const y = v => H - M.bottom - v / top * (H - M.top - M.bottom);

  const svg = s("svg", {viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": id});
  bands.forEach((band, i) => {
    const left = x(band.from), right = x(band.to + (band.to < x1 ? 1 : 0));
    svg.append(s("rect", {class: `band band-${i % 2}`, x: left, y: M.top, width: Math.max(1, Math.min(right, W - M.right) - left),
                          height: H - M.top - M.bottom}, s("title", {}, band.label)));
    svg.append(s("text", {class: "band-label", x: left + 4, y: M.top - 8}, band.label));
    if (i > 0) svg.append(s("line", {class: "band-edge", x1: left, x2: left, y1: M.top, y2: H - M.bottom}));
  });

  const yStep = niceStep(top, 5);
  for (let v = 0; v <= top + 1e-9; v += yStep) {
    svg.append(s("line", {class: "grid", x1: M.left, x2: W - M.right, y1: y(v), y2: y(v)}));
    svg.append(s("text", {class: "tick", x: M.left - 6, y: y(v) + 4, "text-anchor": "end"}, yFormat(v)));
  }
  const xStep = Math.max(1, Math.round(niceStep(x1 - x0, 8)));
  for (let v = Math.ceil(x0 / xStep) * xStep; v <= x1; v += xStep) {
    svg.append(s("text", {class: "tick", x: x(v), y: H - M.bottom + 16, "text-anchor": "middle"}, v));
  }
  svg.append(s("text", {class: "axis-label", x: W - M.right, y: H - 4, "text-anchor": "end"}, xLabel));
  svg.append(s("line", {class: "axis", x1: M.left, x2: W - M.right, y1: y(0), y2: y(0)}));

  for (const mark of marks) {
    svg.append(s("line", {class: "mark", x1: x(mark.x), x2: x(mark.x), y1: H - M.bottom, y2: H - M.bottom - 10,
                          "data-x": mark.x}, s("title", {}, mark.title)));
  }

  for (const line of series) {
    const drawn = line.points.filter(p => p.y !== null && p.y !== undefined);
    if (!drawn.length) continue;
    const path = drawn.map((p, i) => `${i ? "L" : "M"}${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`).join("");
    svg.append(s("path", {class: `line${line.dashed ? " dashed" : ""}`, d: path, stroke: line.color,
                          "data-series": line.key}));
    if (line.dots === false) continue;
    for (const p of drawn) {
      const dot = s("circle", {class: `pt${onPoint ? " clickable" : ""}${p.alert ? " alert" : ""}`,
                               cx: x(p.x), cy: y(p.y), r: 3.5, fill: line.color,
                               "data-series": line.key, "data-x": p.x, "data-y": p.y},
                    s("title", {}, `${line.label} · ${xLabel} ${p.x}: ${yFormat(p.y)}${p.note ? ` · ${p.note}` : ""}`));
      if (onPoint) dot.addEventListener("click", () => onPoint(line, p));
      svg.append(dot);
    }
  }
  figure.append(svg);
  figure.append(h("figcaption", {class: "legend"}, series.map(line =>
    h("span", {class: "key"}, h("i", {class: line.dashed ? "dashed" : "", style: `--c:${line.color}`}), line.label))));
  return figure;
}
