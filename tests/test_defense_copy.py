"""A defense is one file, by experiment: label smoothing's and adversarial regularisation's
modules copied under new names into a copy of the repository (nothing else written) appear in
``privlab parts``, on the Membership page with their knob, among Compare's defense choices and
sweeps, in the advisor's answer, and train in a tiny ``privlab run``
(:func:`benchmarks.declaration_counts.edits_to_add_by_copy`, the registry benchmark's
``edits_to_add_defense_label_smoothing`` and ``edits_to_add_game_defense``). A change that
makes a new defense need a second edit fails here."""

from __future__ import annotations

import pytest

from benchmarks.declaration_counts import edits_to_add_by_copy, renamed_copy


def test_the_copy_renames_the_part_and_nothing_else():
    src = renamed_copy("core/catalog/adversarial_regularization.py", "advreg_copy")
    assert 'DEFENSES.register("advreg_copy"' in src and 'name="advreg_copy"' in src
    assert '"core.catalog.advreg_copy:build_adversarial_regularization"' in src
    assert '"Adversarial regularisation (λ) (copy)"' in src and '"advreg_lambda_copy"' in src
    assert '"adversarial_regularization"' not in src
    smoothing = renamed_copy("core/catalog/label_smoothing.py", "smoothing_copy")
    assert "label_smoothing=self.s" in smoothing  # torch's keyword is no part name
    assert '"label_smoothing_s_copy"' in smoothing


@pytest.mark.parametrize("module", ["core/catalog/label_smoothing.py",
                                    "core/catalog/adversarial_regularization.py"])
def test_a_copied_defense_is_everywhere_with_one_file(module):
    new = "copy_of_" + module.rsplit("/", 1)[1].removesuffix(".py")
    files, seen = edits_to_add_by_copy(module, new)
    assert seen["surfaces"] == {"parts": True, "membership_page": True, "compare_page": True,
                                "compare": True, "advisor": True, "run": True}, seen
    assert files == 1 and seen["files"] == [f"core/catalog/{new}.py"], seen
