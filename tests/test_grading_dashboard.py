"""The class dashboard on 300 simulated submissions: the right counts, and a hostile record stays text.

The simulated class (``autodiff_viz.grading.demo.simulate``) knows each
student's slip, so every count on the page is checked against the truth.
The page is opened in headless Chromium (``file://``, the launch pattern of
``test_html_export_browser.py``): nothing from a submission executes.
"""
import json
import os
import shutil
from collections import Counter

import pytest

from autodiff_viz.grading import dashboard, demo, read_records

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]
HOSTILE = "<img src=x onerror=\"window.__pwned=1\">"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("records")
    truth = demo.simulate(folder, n=300, seed=3)
    return folder, truth


def test_counts_per_kind_match_the_truth(graded):
    folder, truth = graded
    s = dashboard.summary(read_records(folder))
    assert s["students"] == 300
    right = sum(demo.expected(slip) is None for slip in truth.values())
    assert s["all_right"] == right
    expected = Counter(demo.expected(slip) for slip in truth.values() if demo.expected(slip) is not None)
    assert dict(s["first_kinds"]) == dict(expected)
    broken = sum(1 for slip in truth.values() if (demo.expected(slip) or "").startswith(("error", "returned")))
    assert s["no_gradients"] == broken > 0
    assert all(graded == 300 - broken for _, graded in s["per_gradient"].values())
    # each gradient: right for every student whose slip leaves it right
    per = {}
    for student, slip in truth.items():
        rec = json.loads((folder / "mlp" / f"{student}.json").read_text())["checks"]["backward"]
        for row in rec["rows"]:
            per.setdefault(row["name"], [0, 0])
            per[row["name"]][0] += row["kind"] == "correct"
            per[row["name"]][1] += 1
    assert s["per_gradient"] == per
    assert s["per_gradient"]["z"][0] < 300 - expected["wrong_local_factor(tanh)"] + 1
    tanh = next(c for c, kind, node in s["mistakes"] if kind == "wrong_local_factor(tanh)")
    assert tanh == expected["wrong_local_factor(tanh)"]
    assert ("wrong_local_factor(tanh)", "z") in {(k, n) for _, k, n in s["mistakes"]}


def test_the_page_says_it_in_words_with_one_picture_per_mistake(graded):
    folder, truth = graded
    page = dashboard.page(read_records(folder), examples=20)
    n = Counter(demo.expected(s) for s in truth.values())["wrong_local_factor(tanh)"]
    assert f"<b>{round(100 * n / 300)}%</b> ({n}) — <code>wrong_local_factor(tanh)</code> at <code>z</code>" in page
    assert page.count("<figure") == sum(1 for _, k, _ in dashboard.summary(read_records(folder))["mistakes"]
                                        if not k.startswith(("error", "returned")))
    assert "student_0" not in page.split("Who to help first")[0]     # the examples are anonymised
    assert "<script" not in page
    assert f"{dashboard.summary(read_records(folder))['no_gradients']} returned no gradients to compare" in page


@pytest.mark.skipif(not os.path.exists(CHROMIUM) or not shutil.which("dot"), reason="needs Chromium and dot")
def test_a_hostile_submission_does_not_execute_in_a_browser(graded, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    folder, _ = graded
    hostile = tmp_path / "records"
    shutil.copytree(folder, hostile)
    demo.grade_one(hostile, HOSTILE, "tanh_one_minus_h")
    # a record forged by a student's code: names and kinds with markup, a trace label with markup
    path = next((hostile / "mlp").glob("student_001.json"))
    rec = json.loads(path.read_text())
    check = rec["checks"]["backward"]
    rec["student"] = HOSTILE
    for row in check["rows"]:
        row["name"] = HOSTILE
        row["kind"] = "wrong(" + HOSTILE + ")"
        row["root"] = True
    check["first_kind"] = HOSTILE
    if "trace" in check:
        for node in check["trace"]["nodes"]:
            node["name"] = HOSTILE
    path.write_text(json.dumps(rec))
    out = dashboard.write(hostile, tmp_path / "dashboard.html", examples=30)
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": 900, "height": 800})
            page.goto(out.as_uri())
            page.wait_for_selector("#mistakes li")
            assert page.evaluate("window.__pwned") is None
            assert page.evaluate("document.querySelectorAll('img').length") == 0
            assert HOSTILE in page.inner_text("#students")
            widest = page.evaluate("Math.max(...[...document.querySelectorAll('svg')].map("
                                   "s => s.getBoundingClientRect().right))")
            assert widest <= page.evaluate("document.body.getBoundingClientRect().right") + 1
            page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
        finally:
            browser.close()
