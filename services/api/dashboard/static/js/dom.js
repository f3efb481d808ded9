// DOM building and number formatting. Text always goes in as text nodes, never as HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

function build(element, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) element.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(element.dataset, value);
    else element.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** "#/run/3?k=4" for ("/run/3", {k: 4}); empty and null parameters are left out. */
export function link(path, params = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== null && v !== undefined && v !== ""));
  return `#${path}${query.size ? `?${query}` : ""}`;
}

/** h("a", {href: "#/"}, "text", child…) */
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

/** Replace the element's children (nested arrays flattened; null and false left out). */
export function fill(element, ...children) {
  element.replaceChildren();
  return build(element, {}, children);
}

export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

/** 0.4833 -> "48.3%"; null -> "—". */
export function pct(value, digits = 1) {
  return value === null || value === undefined ? "—" : `${(100 * value).toFixed(digits)}%`;
}

export function num(value, digits = 2) {
  return value === null || value === undefined ? "—" : Number(value).toFixed(digits);
}

export function seconds(value) {
  if (value === null || value === undefined) return "—";
  return value < 60 ? `${value.toFixed(1)} s` : `${(value / 60).toFixed(1)} min`;
}

export function when(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  const minutes = (Date.now() - date.getTime()) / 60000;
  if (minutes < 1) return "just now";
  if (minutes < 60) return `${Math.round(minutes)} min ago`;
  if (minutes < 48 * 60) return `${Math.round(minutes / 60)} h ago`;
  return date.toISOString().slice(0, 10);
}

export function statusBadge(status) {
  return h("span", {class: `badge status-${status}`}, status);
}

export function emptyState(title, detail) {
  return h("div", {class: "empty"}, h("p", {class: "empty-title"}, title), detail ? h("p", {}, detail) : null);
}
