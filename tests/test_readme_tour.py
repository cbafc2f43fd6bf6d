"""The README's teaching tour is generated from the lessons benchmark's output
(``python -m benchmarks.readme_tour``): its numbers are that file's, position by position."""

from __future__ import annotations

import json

from benchmarks import readme_tour as T


def _res():
    return json.loads(T.RESULTS.read_text())


def test_the_readme_tour_is_the_one_generated_from_lessons_json():
    res, readme = _res(), T.README.read_text()
    n, bad = T.mismatched_numbers(readme, res)
    assert n >= 20 and bad == 0, f"{bad} of {n} numbers differ: python -m benchmarks.readme_tour"
    assert T.current_block(readme) == T.block(res)


def test_every_page_lesson_is_quoted_from_the_results():
    res = _res()
    tour = T.tour(res)
    for page, det in res["details"].items():
        for s in det["lesson"]["sentences"]:
            assert s in tour, (page, s)
    assert [line.split(".")[0] for line in tour.splitlines()] == [str(i) for i in range(1, 8)]


def test_a_changed_figure_is_a_mismatch():
    res, readme = _res(), T.README.read_text()
    det = res["details"]["membership"]["lesson"]
    det["sentences"] = [det["sentences"][0].replace("0.", "9.", 1), *det["sentences"][1:]]
    assert T.mismatched_numbers(readme, res)[1] == 1
    assert T.mismatched_numbers("no markers", res)[1] == len(T.tour_numbers(T.block(res)))
