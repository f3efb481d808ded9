"""The dashboard's JSON views over real HTTP, on Postgres and on SQLite (the embedded default):
the numbers agree with the API's own trajectory, and polling with a version, a cursor and an
ETag sends only what changed."""
from __future__ import annotations

import re

import pytest

from tests.dashboard.stack import Api, backdate, eval_items, episodes_for, seed_run


@pytest.fixture(scope="module", params=["postgres", "sqlite"])
def seeded(request, tmp_path_factory):
    """An API with two runs whose whole history is an hour old."""
    if request.param == "postgres":
        api, own = request.getfixturevalue("api"), False
    else:
        workdir = tmp_path_factory.mktemp("views-sqlite")
        api, own = Api(f"sqlite:///{workdir}/verirl.db", workdir), True
    runs = {"scratch": seed_run(api, "rl12-m1-scratch", 0), "warm": seed_run(api, "rl13-m1-warm", 1, status="finished")}
    backdate(api)
    yield api, runs
    if own:
        api.stop()


def summary(api: Api, run_id: int, **params) -> dict:
    return api.get(f"/api/dashboard/runs/{run_id}/summary", **params)


def test_summary_eval_points_equal_the_trajectory_endpoint(seeded):
    api, runs = seeded
    full = summary(api, runs["scratch"])
    trajectory = api.get(f"/runs/{runs['scratch']}/trajectory")
    assert full["complete"] and [p["iteration"] for p in full["evals"]] == [0, 3, 6]
    for ours, theirs in zip(full["evals"], trajectory["iterations"], strict=True):
        for key in ("iteration", "tasks", "episodes", "pass_rate", "turn1_rate", "pass_at_k", "solved_by_n_turns", "families"):
            assert ours[key] == theirs[key], key


def test_summary_carries_iteration_metrics_phases_and_config(seeded):
    api, runs = seeded
    full = summary(api, runs["scratch"])
    stored = api.get(f"/runs/{runs['scratch']}/iterations")
    assert [row["iteration"] for row in full["iterations"]] == list(range(10))
    for ours, theirs in zip(full["iterations"], stored, strict=True):
        assert ours["train_reward"] == theirs["metrics"]["train_reward"]
        assert ours["groups_with_signal"] == theirs["metrics"]["groups_with_signal"]
    assert [row["phase"] for row in full["iterations"]] == [0, 0, 0] + [1] * 7
    assert full["iterations"][2]["dead"] is True
    assert full["run"]["config"]["phases"][1]["tasks"] == "m1"
    assert full["run"]["phase_label"] == "1 · m1"
    assert full["phases"] == [{"from": 0, "to": 2, "phase": 0, "label": "phase 0 · m0"},
                              {"from": 3, "to": 9, "phase": 1, "label": "phase 1 · m1"}]


def test_compact_summary_is_what_a_comparison_draws(seeded):
    api, runs = seeded
    full = summary(api, runs["warm"])
    compact = summary(api, runs["warm"], compact="true")
    assert compact["iterations"] == [] and "config" not in compact["run"]
    assert compact["phases"] == full["phases"]
    assert compact["evals"] == [{k: v for k, v in p.items() if k != "families"} for p in full["evals"]]


def test_summary_at_the_current_version_is_unchanged(seeded):
    api, runs = seeded
    full = summary(api, runs["warm"])
    again = summary(api, runs["warm"], since_version=full["version"], changed_after=full["cursor"])
    assert again["unchanged"] is True
    assert "evals" not in again and "iterations" not in again
    assert again["version"] == full["version"]


def test_summary_delta_holds_only_rows_written_after_the_cursor(seeded):
    api, runs = seeded
    run_id = runs["scratch"]
    full = summary(api, run_id)
    items = eval_items(9, 0)
    api.post(f"/runs/{run_id}/iterations", {"iteration": 10, "metrics": {"phase": 1, "train_reward": 0.75}})
    api.post(f"/runs/{run_id}/evals", {"iteration": 9, "items": items[:3]})
    delta = summary(api, run_id, since_version=full["version"], changed_after=full["cursor"])
    assert not delta["unchanged"] and not delta["complete"]
    assert [row["iteration"] for row in delta["iterations"]] == [10]
    assert [p["iteration"] for p in delta["evals"]] == [9] and delta["evals"][0]["tasks"] == 3

    # The rest of eval 9 arrives later: the point comes again, recomputed over all six tasks.
    api.post(f"/runs/{run_id}/evals", {"iteration": 9, "items": items[3:]})
    later = summary(api, run_id, since_version=delta["version"], changed_after=delta["cursor"])
    assert [p["iteration"] for p in later["evals"]] == [9] and later["evals"][0]["tasks"] == 6
    assert later["evals"][0]["pass_rate"] == api.get(f"/runs/{run_id}/trajectory")["iterations"][-1]["pass_rate"]


def test_unchanged_poll_is_a_bodiless_304(seeded):
    api, runs = seeded
    url = f"/api/dashboard/runs/{runs['warm']}/summary"
    full = summary(api, runs["warm"])
    cursors = {"since_version": full["version"], "changed_after": full["cursor"]}
    first = api.client.get(url, params=cursors)
    again = api.client.get(url, params=cursors, headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.content == b""


def test_runs_overview_has_latest_iteration_and_heldout_rate(seeded):
    api, runs = seeded
    overview = api.get("/api/dashboard/runs")
    by_name = {run["name"]: run for run in overview["items"]}
    for name, run_id in (("rl12-m1-scratch", runs["scratch"]), ("rl13-m1-warm", runs["warm"])):
        last = api.get(f"/runs/{run_id}/trajectory")["iterations"][-1]
        assert by_name[name]["latest_eval"] == {"iteration": last["iteration"], "tasks": last["tasks"],
                                                "pass_rate": last["pass_rate"], "turn1_rate": last["turn1_rate"]}
        assert by_name[name]["iteration"] == max(row["iteration"] for row in api.get(f"/runs/{run_id}/iterations"))
    assert overview["poll_s"] > 0


def test_runs_overview_after_cursor_lists_only_changed_runs(seeded):
    api, runs = seeded
    backdate(api)
    cursor = api.get("/api/dashboard/runs")["cursor"]
    assert api.get("/api/dashboard/runs", changed_after=cursor)["items"] == []
    api.client.patch(f"/runs/{runs['warm']}", json={"tags": ["m1", "warm", "best"]}).raise_for_status()
    changed = api.get("/api/dashboard/runs", changed_after=cursor)
    assert [run["name"] for run in changed["items"]] == ["rl13-m1-warm"]
    assert changed["items"][0]["tags"] == ["m1", "warm", "best"]


def test_episodes_filter_by_turn_solved(seeded):
    api, runs = seeded
    items = {item["task_id"]: item for item in eval_items(6, 0)}
    page = api.get(f"/api/dashboard/runs/{runs['scratch']}/episodes", split="heldout", iteration=6, solved_turn=2)
    expected = sum(item["passed_by_turn"][1] - item["passed_by_turn"][0] for item in items.values())
    assert len(page["items"]) == expected > 0
    for episode in page["items"]:
        turns = api.get(f"/episodes/{episode['id']}")["turns"]
        assert [t["passed"] for t in turns] == [False, True]
        assert [t["reason"] for t in episode["turns"]] == ["compile_error", "ok"]


def test_episodes_filter_failed_in_one_family(seeded):
    api, runs = seeded
    item_by_task = {item["task_id"]: item for item in eval_items(6, 0) if item["family"] == "concrete"}
    page = api.get(f"/api/dashboard/runs/{runs['scratch']}/episodes", split="heldout", iteration=6,
                   family="concrete", passed="false")
    assert len(page["items"]) == sum(item["n"] - item["passed_by_turn"][-1] for item in item_by_task.values())
    assert all(not e["passed"] and e["solved_turn"] is None and e["family"] == "concrete" for e in page["items"])


def test_episodes_page_with_the_cursor(seeded):
    api, runs = seeded
    path = f"/api/dashboard/runs/{runs['warm']}/episodes"
    everything = api.get(path, split="heldout", limit=500)["items"]
    first = api.get(path, split="heldout", limit=10)
    second = api.get(path, split="heldout", limit=10, after=first["next_after"])
    assert first["has_more"] and [e["id"] for e in first["items"] + second["items"]] == [e["id"] for e in everything[:20]]
    assert len(everything) == len(episodes_for(0, eval_items(0, 1))) * 3


@pytest.mark.parametrize("path, params, status, message", [
    ("/api/dashboard/runs/{run}/summary", {"k": 0}, 422, "query.k.0: Input should be greater than 0"),
    ("/api/dashboard/runs/999999/summary", {}, 404, "no run with id 999999"),
    ("/api/dashboard/runs/{run}/summary", {"changed_after": "yesterday"}, 422, "changed_after"),
    ("/api/dashboard/runs/{run}/episodes", {"solved_turn": 0}, 422, "solved_turn"),
    ("/api/dashboard/runs/{run}/episodes", {"split": "test"}, 422, "split"),
    ("/api/dashboard/runs", {"changed_after": "soon"}, 422, "changed_after"),
])
def test_bad_query_is_a_4xx_that_says_what(seeded, path, params, status, message):
    api, runs = seeded
    response = api.client.get(path.format(run=runs["scratch"]), params=params)
    assert response.status_code == status
    assert message in response.json()["detail"]


def test_page_and_every_module_it_imports_are_served_locally(seeded):
    api, _ = seeded
    html = api.client.get("/")
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert not re.search(r"(src|href)=\"https?://", html.text), "no asset may come from another host"
    pending, seen = re.findall(r"(?:src|href)=\"(/dashboard/static/[^\"]+)\"", html.text), set()
    while pending:
        path = pending.pop()
        if path in seen:
            continue
        seen.add(path)
        response = api.client.get(path)
        assert response.status_code == 200, path
        assert response.headers["cache-control"] == "no-cache"
        assert api.client.get(path, headers={"If-None-Match": response.headers["etag"]}).status_code == 304
        base = path.rsplit("/", 1)[0]
        for target in re.findall(r"from \"(\.{1,2}/[^\"]+)\"", response.text):
            parts = base.split("/")
            for part in target.split("/"):
                if part == "..":
                    parts.pop()
                elif part != ".":
                    parts.append(part)
            pending.append("/".join(parts))
    assert {"/dashboard/static/js/app.js", "/dashboard/static/js/views/run.js", "/dashboard/static/style.css"} <= seen


def test_large_answers_are_gzipped_for_clients_that_accept_it(seeded):
    api, runs = seeded
    url = f"/api/dashboard/runs/{runs['scratch']}/summary"
    zipped = api.client.get(url, headers={"Accept-Encoding": "gzip"})
    plain = api.client.get(url, headers={"Accept-Encoding": "identity"})
    assert zipped.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    assert zipped.num_bytes_downloaded < len(plain.content) / 3
    assert {k: v for k, v in zipped.json().items() if k != "cursor"} == {k: v for k, v in plain.json().items() if k != "cursor"}
