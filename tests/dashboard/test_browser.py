"""The dashboard in real headless Chromium against the real API (Postgres): what the pages draw
and print equals what the API serves; a new eval appears without a reload, fetched as a delta;
transcripts open from the per-family table; comparison tables export as Markdown and CSV.
Screenshots land in artifacts/screenshots/."""
from __future__ import annotations

import csv
import io
import json
from decimal import ROUND_HALF_UP, Decimal

import pytest

from tests.dashboard.stack import backdate, eval_items, seed_run, screenshot


@pytest.fixture(scope="module")
def runs(api):
    """Two finished-looking runs with an hour-old history, and one live run."""
    ids = {"scratch": seed_run(api, "b12-m1-scratch", 0),
           "warm": seed_run(api, "b13-m1-warm", 1, status="finished", tags=("m1", "warm")),
           "live": seed_run(api, "b14-m1-live", 2)}
    backdate(api)
    # A write now: the live run counts as active again, so the server asks for quick polls.
    api.client.patch(f"/runs/{ids['live']}", json={"status": "running"}).raise_for_status()
    return ids


def fixed(value: float, digits: int) -> str:
    """Number.prototype.toFixed: the exact binary value rounded half up."""
    return str(Decimal(value).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def pct(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{fixed(100 * value, digits)}%"


def points(page, chart: str, series: str) -> list[tuple[float, float]]:
    return [tuple(p) for p in page.eval_on_selector_all(
        f'#{chart} circle[data-series="{series}"]', "els => els.map(e => [Number(e.dataset.x), Number(e.dataset.y)])")]


def open_run(page, api, run_id: int) -> None:
    page.goto(f"{api.url}/#/run/{run_id}")
    page.wait_for_selector("#trajectory circle")


def test_runs_list_shows_iteration_and_latest_heldout_rate(page, api, runs):
    page.goto(f"{api.url}/")
    page.wait_for_selector("table.runs")
    for run_id in (runs["scratch"], runs["warm"]):
        row = page.locator(f'tr[data-run="{run_id}"]')
        last = api.get(f"/runs/{run_id}/trajectory")["iterations"][-1]
        assert row.locator('td[data-col="iteration"]').inner_text() == "9"
        assert row.locator('td[data-col="pass"] b').inner_text() == pct(last["pass_rate"])
    assert "finished" in page.locator(f'tr[data-run="{runs["warm"]}"]').inner_text()
    screenshot(page, "runs-list")

    # A run created while the page is open shows up without a reload.
    page.evaluate("window.stillTheSamePage = true")
    api.post("/runs", {"name": "b16-m1-new", "config": {}, "status": "running", "tags": ["fresh"]})
    page.wait_for_selector("tr:has-text('b16-m1-new')")
    assert page.evaluate("window.stillTheSamePage") is True

    page.fill('input[type="search"]', "b13")
    assert page.locator("table.runs tbody tr").count() == 1
    assert "q=b13" in page.url
    page.fill('input[type="search"]', "b1")
    page.check(f'tr[data-run="{runs["scratch"]}"] input[type="checkbox"]')
    page.check(f'tr[data-run="{runs["warm"]}"] input[type="checkbox"]')
    page.click("text=Compare selected (2)")
    page.wait_for_selector("table.compare")
    assert f"runs={runs['scratch']}%2C{runs['warm']}" in page.url or f"runs={runs['scratch']},{runs['warm']}" in page.url


def test_run_page_chart_points_and_tables_equal_the_api(page, api, runs):
    run_id = runs["scratch"]
    open_run(page, api, run_id)
    trajectory = api.get(f"/runs/{run_id}/trajectory")["iterations"]
    assert points(page, "trajectory", "pass_rate") == [(p["iteration"], p["pass_rate"]) for p in trajectory]
    assert points(page, "trajectory", "turn1_rate") == [(p["iteration"], p["turn1_rate"]) for p in trajectory]
    assert points(page, "trajectory", "pass_at_4") == [(p["iteration"], p["pass_at_k"]["4"]) for p in trajectory]
    assert points(page, "trajectory", "pass_at_8") == []  # n=4 episodes per task: pass@8 does not exist

    # Drawn where the values say: a higher rate sits higher (smaller cy).
    drawn = page.eval_on_selector_all('#trajectory circle[data-series="pass_rate"]',
                                      "els => els.map(e => [Number(e.dataset.y), Number(e.getAttribute('cy'))])")
    assert sorted(drawn) == sorted(drawn, key=lambda p: -p[1])
    assert page.locator("#trajectory .band-label").all_text_contents() == ["phase 0 · m0", "phase 1 · m1"]

    for p in trajectory:
        row = page.locator(f'#section-trajectory tr[data-iteration="{p["iteration"]}"]')
        assert row.locator('td[data-col="pass_rate"]').inner_text() == pct(p["pass_rate"])
        assert row.locator('td[data-col="turn1_rate"]').inner_text() == pct(p["turn1_rate"])
        assert row.locator('td[data-col="pass_at_4"]').inner_text() == pct(p["pass_at_k"]["4"])
        for family, summary in p["families"].items():
            cell = page.locator(f'tr[data-family="{family}"] td').nth(trajectory.index(p))
            assert cell.inner_text() == f"{round(summary['pass_rate'] * summary['episodes'])}/{summary['episodes']}"

    iterations = api.get(f"/runs/{run_id}/iterations")
    assert points(page, "training", "train_reward") == [(r["iteration"], r["metrics"]["train_reward"]) for r in iterations]
    assert points(page, "training", "signal_share") == [
        (r["iteration"], r["metrics"]["groups_with_signal"] / r["metrics"]["groups"]) for r in iterations]
    assert page.inner_text("#dead-count") == "1 dead iteration of 10"
    assert page.eval_on_selector_all("#training line.mark", "els => els.map(e => Number(e.dataset.x))") == [2]
    assert page.locator('#timings path[data-series="time_grading_s"]').count() == 1
    page.click("#section-config summary")
    assert json.loads(page.inner_text("pre.config")) == api.get(f"/runs/{run_id}")["config"]
    screenshot(page, "run-page")

    page.dispatch_event('#trajectory circle[data-series="pass_rate"][data-x="3"]', "click")
    page.wait_for_selector("article.episode")
    assert page.url.endswith(f"#/run/{run_id}/transcripts?split=heldout&iteration=3")
    assert {e["iteration"] for e in api.get(f"/runs/{run_id}/episodes", split="heldout", iteration=3)["items"]} == {3}
    assert page.locator("article.episode").count() == len(api.get(f"/runs/{run_id}/episodes", split="heldout", iteration=3)["items"])


def test_new_eval_appears_without_reload_as_a_delta(page, api, runs):
    run_id = runs["live"]
    deltas = []
    page.on("response", lambda r: deltas.append(r) if "since_version=" in r.url and r.status == 200 else None)
    open_run(page, api, run_id)
    page.evaluate("window.stillTheSamePage = true")
    assert points(page, "trajectory", "pass_rate")[-1][0] == 6

    items = eval_items(9, 2)
    api.post(f"/runs/{run_id}/evals", {"iteration": 9, "items": items})
    api.post(f"/runs/{run_id}/iterations", {"iteration": 10, "metrics": {"phase": 1, "phase_tasks": "m1", "groups": 12,
                                                                          "groups_with_signal": 0, "dead": True,
                                                                          "train_reward": 0.0}})
    page.wait_for_selector('#trajectory circle[data-series="pass_rate"][data-x="9"]')
    page.wait_for_selector('#training line.mark[data-x="10"]', state="attached")

    assert page.evaluate("window.stillTheSamePage") is True
    latest = api.get(f"/runs/{run_id}/trajectory")["iterations"][-1]
    assert points(page, "trajectory", "pass_rate")[-1] == (9, latest["pass_rate"])
    assert page.locator('#section-trajectory tr[data-iteration="9"] td[data-col="pass_rate"]').inner_text() == pct(latest["pass_rate"])
    assert page.inner_text("#dead-count") == "2 dead iterations of 11"
    # Only what changed travelled: the answers after the first load hold eval 9 and iteration 10.
    bodies = [r.json() for r in deltas]
    sent_evals = {p["iteration"] for body in bodies if not body["unchanged"] for p in body["evals"]}
    sent_iterations = {r["iteration"] for body in bodies if not body["unchanged"] for r in body["iterations"]}
    assert sent_evals == {9} and sent_iterations == {10}
    screenshot(page, "run-page-live")


def test_transcript_opens_from_a_family_cell_with_answers_and_feedback(page, api, runs):
    run_id = runs["scratch"]
    open_run(page, api, run_id)
    page.click('tr[data-family="concrete"] td:nth-child(4) a')  # the eval at iteration 6
    page.wait_for_selector("article.episode")
    assert "split=heldout" in page.url and "iteration=6" in page.url and "family=concrete" in page.url
    listed = api.get(f"/runs/{run_id}/episodes", split="heldout", iteration=6, family="concrete")["items"]
    assert page.locator("article.episode").count() == len(listed)

    retried = next(e for e in listed if e["n_turns"] == 2)
    page.click(f'article[data-episode="{retried["id"]}"] .episode-head')
    page.wait_for_selector(f'article[data-episode="{retried["id"]}"] .turn')
    transcript = api.get(f"/episodes/{retried['id']}")
    shown = page.locator(f'article[data-episode="{retried["id"]}"] .turn')
    assert shown.count() == 2
    for i, turn in enumerate(transcript["turns"]):
        assert shown.nth(i).locator("pre.answer").inner_text() == turn["completion"]
        if turn["feedback"]:
            assert shown.nth(i).locator("pre.feedback").inner_text() == turn["feedback"]
        assert ("passed" if turn["passed"] else f"failed: {turn['reason']}") in shown.nth(i).inner_text()
    assert f"ep={retried['id']}" in page.url
    screenshot(page, "transcripts")

    # The URL is the state: opened afresh, it shows the same episode open.
    shared = page.url
    page.goto("about:blank")
    page.goto(shared)
    page.wait_for_selector(f'article[data-episode="{retried["id"]}"] .turn')

    page.select_option('select[data-filter="passed"]', "false")
    page.wait_for_function("location.hash.includes('passed=false')")
    page.wait_for_selector("article.episode")
    failed = api.get(f"/runs/{run_id}/episodes", split="heldout", iteration=6, family="concrete", passed="false")["items"]
    assert page.locator("article.episode.failed").count() == page.locator("article.episode").count() == len(failed) > 0


def test_compare_table_and_its_markdown_and_csv_exports(page, api, runs):
    ids = [runs["scratch"], runs["warm"]]
    page.goto(f"{api.url}/#/compare?runs={ids[0]},{ids[1]}&k=4")
    page.wait_for_selector("table.compare tbody tr")
    names = ["b12-m1-scratch", "b13-m1-warm"]
    trajectories = [{p["iteration"]: p for p in api.get(f"/runs/{i}/trajectory")["iterations"]} for i in ids]

    def cell(p: dict) -> str:
        phase = "phase 0 · m0" if p["iteration"] < 3 else "phase 1 · m1"
        return f"{pct(p['pass_rate'])} ({phase}; p@4 {pct(p['pass_at_k']['4'], 0)})"

    expected = [f"| iter | {' | '.join(names)} |", "|---|---|---|"] + [
        f"| {i} | {cell(trajectories[0][i])} | {cell(trajectories[1][i])} |" for i in sorted(trajectories[0])]
    for i in sorted(trajectories[0]):
        for run_id, trajectory in zip(ids, trajectories):
            shown = page.locator(f'table.compare tr[data-iteration="{i}"] td[data-run="{run_id}"]').inner_text()
            assert shown == cell(trajectory[i])
    assert len(points(page, "compare-chart", f"run-{ids[0]}")) == len(trajectories[0])

    with page.expect_download() as markdown:
        page.click("#export-md")
    assert markdown.value.path().read_text() == "\n".join(expected) + "\n"
    with page.expect_download() as exported:
        page.click("#export-csv")
    rows = list(csv.DictReader(io.StringIO(exported.value.path().read_text())))
    assert len(rows) == 2 * len(trajectories[0])
    for row in rows:
        p = trajectories[names.index(row["run"])][int(row["iteration"])]
        assert (float(row["pass_rate"]), float(row["turn1_rate"]), float(row["pass_at_4"])) == \
               (p["pass_rate"], p["turn1_rate"], p["pass_at_k"]["4"])
        assert int(row["tasks"]) == p["tasks"] and int(row["episodes"]) == p["episodes"]
    page.click("summary:has-text('Markdown')")
    screenshot(page, "compare")


def test_empty_unknown_and_unreachable_states_say_so(page, api, runs):
    empty = api.post("/runs", {"name": "b15-empty", "config": {}, "status": "created"})["id"]
    page.goto(f"{api.url}/#/run/{empty}")
    page.wait_for_selector("#section-trajectory .chart-empty")
    assert "No held-out evals yet" in page.inner_text("#section-trajectory")
    assert "No training iterations recorded yet" in page.inner_text("#section-training")

    page.goto(f"{api.url}/#/run/999999")
    page.wait_for_selector("text=No run 999999.")
    page.goto(f"{api.url}/#/?q=no-such-run-anywhere")
    page.wait_for_selector("text=No run matches")
    page.goto(f"{api.url}/#/run/{runs['scratch']}/transcripts?family=no_such_family")
    page.wait_for_selector("text=No episodes match these filters.")
    page.goto(f"{api.url}/#/compare")
    page.wait_for_selector("text=Pick runs to compare.")
    page.goto(f"{api.url}/#/no/such/page")
    page.wait_for_selector("text=No such page")

    # The network to the API fails (simulated by the browser refusing the requests): the page
    # says so and keeps what it has; when the API answers again, the warning goes away.
    open_run(page, api, runs["live"])
    page.route("**/api/dashboard/**", lambda route: route.abort())
    page.wait_for_selector("#banner:has-text('Live updates paused')")
    assert page.inner_text("#live") == "offline"
    assert page.locator("#trajectory circle").count() > 0
    screenshot(page, "api-unreachable")
    page.unroute("**/api/dashboard/**")
    page.wait_for_selector("#banner", state="hidden")
