// Transcripts of one run: episodes filtered by split, iteration, family, passed/failed and the
// turn that solved them (all in the URL); opening one shows every turn's answer, the grader's
// verdict and feedback. Pages with the `after` cursor.

import {getJSON, RunFeed} from "../api.js";
import {emptyState, fill, h, link, num} from "../dom.js";

const FILTERS = ["split", "iteration", "family", "passed", "solved_turn"];

export function mount(container, route, ui) {
  const [runId] = route.ids;
  const filters = Object.fromEntries(FILTERS.map(name => [name, route.params.get(name) || ""]));
  const openId = Number(route.params.get("ep")) || null;
  const path = `/run/${runId}/transcripts`;
  const setFilter = (name, value) => ui.go(path, {...filters, [name]: value});
  let after = 0, stopped = false;

  const title = h("h1", {}, h("a", {href: "#/", class: "crumb"}, "Runs"), " / ",
                  h("a", {href: link(`/run/${runId}`), class: "crumb", id: "run-link"}, `run ${runId}`), " / transcripts");
  const form = h("div", {class: "filters"});
  const list = h("div", {id: "episodes"}, h("p", {class: "empty"}, "Loading…"));
  const more = h("button", {type: "button", hidden: true, onclick: () => load()}, "Load more");
  container.append(h("section", {class: "card"}, h("div", {class: "card-head"}, title), form, list, more));

  function select(name, label, options) {
    return h("label", {}, label, h("select", {"data-filter": name, onchange: event => setFilter(name, event.target.value)},
      options.map(([value, text]) => h("option", {value, selected: String(value) === filters[name]}, text))));
  }

  // The filter choices come from the run's summary: its eval iterations and families.
  const feed = new RunFeed(runId, [1]);
  feed.refresh().then(() => {
    title.querySelector("#run-link").textContent = feed.run.name;
    const iterations = [...new Set([...feed.evals.keys(), ...feed.iterations.keys()])].sort((a, b) => a - b);
    const families = [...new Set(feed.sortedEvals().flatMap(p => Object.keys(p.families)))].sort();
    if (filters.family && !families.includes(filters.family)) families.push(filters.family);
    if (filters.iteration && !iterations.includes(Number(filters.iteration))) iterations.push(Number(filters.iteration));
    const turns = Math.max(1, ...feed.sortedEvals().map(p => p.solved_by_n_turns.length));
    fill(form,
      select("split", "split", [["", "all"], ["heldout", "held-out"], ["train", "train"]]),
      select("iteration", "iteration", [["", "all"], ...iterations.map(i => [i, i])]),
      select("family", "family", [["", "all"], ...families.map(f => [f, f || "(none)"])]),
      select("passed", "verdict", [["", "all"], ["true", "passed"], ["false", "failed"]]),
      select("solved_turn", "solved at turn", [["", "any"], ...Array.from({length: turns}, (_, i) => [i + 1, i + 1])]),
      Object.values(filters).some(Boolean) ? h("a", {href: link(path), class: "button"}, "Clear filters") : null);
  }).catch(error => ui.error(`Cannot load run ${runId}: ${error.message}`));

  async function load() {
    more.hidden = true;
    const params = new URLSearchParams({after, limit: 50});
    for (const name of FILTERS) if (filters[name]) params.set(name, filters[name]);
    try {
      const {body} = await getJSON(`/api/dashboard/runs/${runId}/episodes?${params}`);
      if (stopped) return;
      if (after === 0) fill(list);
      if (after === 0 && !body.items.length) {
        list.append(emptyState("No episodes match these filters.",
          "Episodes appear when the trainer posts its rollouts (POST /runs/{id}/episodes)."));
      }
      for (const episode of body.items) list.append(row(episode));
      after = body.next_after;
      more.hidden = !body.has_more;
    } catch (error) {
      fill(list, emptyState("Cannot load the episodes.", error.message));
    }
  }

  function row(episode) {
    const detail = h("div", {class: "transcript", hidden: true});
    const toggle = () => {
      detail.hidden = !detail.hidden;
      detail.previousElementSibling.setAttribute("aria-expanded", String(!detail.hidden));
      history.replaceState(null, "", link(path, {...filters, ep: detail.hidden ? "" : episode.id}));
      if (!detail.hidden && !detail.childElementCount) openTranscript(episode.id, detail);
    };
    const item = h("article", {class: `episode ${episode.passed ? "passed" : "failed"}`, "data-episode": episode.id},
      h("button", {type: "button", class: "episode-head", onclick: toggle, "aria-expanded": "false"},
        h("span", {class: "verdict"}, episode.passed ? `✓ solved at turn ${episode.solved_turn}` : "✗ failed"),
        h("span", {class: "task"}, episode.task_id), h("span", {class: "muted"}, `#${episode.index}`),
        h("span", {class: "muted"}, `iter ${episode.iteration} · ${episode.split}`),
        h("span", {class: "chips"}, episode.turns.map((turn, i) =>
          h("span", {class: `chip ${turn.passed ? "ok" : "bad"}`, title: `turn ${i + 1}: ${turn.reason || "?"}`},
            `${i + 1}: ${turn.passed ? "ok" : turn.reason || "failed"}`))),
        h("span", {class: "muted"}, `reward ${num(episode.reward)}`)),
      detail);
    if (episode.id === openId) toggle();
    return item;
  }

  async function openTranscript(episodeId, into) {
    fill(into, h("p", {class: "muted"}, "Loading the transcript…"));
    try {
      const {body} = await getJSON(`/episodes/${episodeId}`);
      fill(into,
        body.prompt ? h("details", {class: "prompt"}, h("summary", {}, "prompt"), h("pre", {}, body.prompt)) : null,
        body.turns.length ? body.turns.map(turn => h("div", {class: `turn ${turn.passed ? "passed" : "failed"}`, "data-turn": turn.index},
          h("div", {class: "turn-head"}, h("b", {}, `turn ${turn.index + 1}`),
            h("span", {class: `chip ${turn.passed ? "ok" : "bad"}`}, turn.passed ? "passed" : `failed: ${turn.reason || "?"}`),
            turn.sampled_tokens ? h("span", {class: "muted"}, `${turn.sampled_tokens} tokens`) : null),
          h("div", {class: "label"}, "answer"), h("pre", {class: "answer"}, turn.completion),
          turn.feedback ? [h("div", {class: "label"}, "grader feedback"), h("pre", {class: "feedback"}, turn.feedback)] : null))
          : emptyState("This episode has no turns recorded."));
    } catch (error) {
      fill(into, emptyState("Cannot load the transcript.", error.message));
    }
  }

  ui.live("idle", "episodes as of opening");
  load();
  return {stop: () => { stopped = true; }};
}
