"""The README's code runs as written (:mod:`benchmarks.readme_blocks`): every Python and shell
block of the README and of the docs pages it links runs in a scratch store, and a block that
cannot is marked with its reason; the README's first screen says what a newcomer needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import readme_blocks as B


def test_every_readme_and_docs_block_runs_as_written():
    res = B.run_all()
    assert res["readme_blocks_failed"] == 0, "\n".join(res["failures"])
    # the README's own example, the command line, the Python API, parts and data pages
    assert res["readme_blocks_executed"] >= 6
    assert all(reason.split(": ", 1)[1] for reason in res["not_run"])


def test_a_broken_block_fails_and_a_marked_one_is_not_run(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```bash\nprivlab run examples/no_such.yaml\n```\n\n"
                    "```python\nimport privlab\nprivlab.load('abcdef')\n```\n\n"
                    "<!-- not run: starts a server -->\n```bash\nexit 3\n```\n\n"
                    "```python\nprint(1)\n```\n\n```text\nnot code\n```\n")
    res = B.run_all([page])
    assert (res["readme_blocks_executed"], res["readme_blocks_failed"],
            res["readme_blocks_not_run"]) == (3, 2, 1)
    assert res["failures"][0].startswith(f"{page}:3: exit 2")  # the CLI's one-line refusal
    assert "LookupError" in res["failures"][1]
    assert res["not_run"] == [f"{page}:13: starts a server"]


def test_the_readme_links_its_pages_and_its_first_screen_has_what_a_newcomer_needs():
    linked = {p.relative_to(B.ROOT).as_posix() for p in B.pages()}
    assert {"docs/tour.md", "docs/cli.md", "docs/python.md", "docs/parts.md", "docs/serving.md",
            "docs/engine.md"} <= linked
    text = B.README.read_text(encoding="utf-8")
    first = "\n".join(text.splitlines()[:30])
    for needed in ("make run", "make test", ".venv/bin/privlab", "](docs/membership.png)"):
        assert needed in first, needed
    shot = B.ROOT / "docs" / "membership.png"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size < 200_000
    assert len(text.splitlines()) <= 60


@pytest.mark.parametrize("page", B.pages(), ids=lambda p: p.name)
def test_every_local_link_and_image_of_a_page_exists(page: Path):
    import re

    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
        if "://" not in target:
            assert (page.parent / target).exists(), (page.name, target)
