"""Number inputs run exactly what they show (issue #20 item 4): the parser, the config ranges,
and on every page an empty, non-numeric and out-of-range entry shows its error beside the box,
disables Run and starts nothing."""

from __future__ import annotations

import pytest

from core.config.schema import FedAvgSpec, MembershipTrainSpec
from core.foundation.checks import field_range
from dashboard.components.inputs import parse_number, text_key
from tests.test_pages import open_page, store  # noqa: F401  (fixture)


def test_field_range_reads_the_config_constraints():
    assert field_range(MembershipTrainSpec, "members") == {
        "lo": 20, "hi": 100_000, "lo_open": False, "hi_open": False, "integer": True}
    r = field_range(FedAvgSpec, "fraction_fit")
    assert (r["lo"], r["lo_open"], r["hi"], r["integer"]) == (0.0, True, 1.0, False)


@pytest.mark.parametrize("text, value", [("500", 500), (" 1e3 ", 1000), ("20", 20)])
def test_parse_valid_integer(text, value):
    got, err = parse_number(text, "Members", lo=20, hi=5000, integer=True)
    assert (got, err) == (value, None) and isinstance(got, int)


@pytest.mark.parametrize("text, part", [
    ("", "Members: empty; allowed range 20 <= value <= 5000 (integer)"),
    ("abc", "Members: 'abc' is not a number"),
    ("5001", "Members: got '5001'; allowed range 20 <= value <= 5000"),
    ("19", "Members: got '19'"), ("2.5", "Members: got '2.5'"), ("nan", "got 'nan'"),
    ("inf", "got 'inf'"),
])
def test_parse_invalid_never_becomes_a_number(text, part):
    got, err = parse_number(text, "Members", lo=20, hi=5000, integer=True)
    assert got is None and part in err and "\n" not in err


def test_parse_open_ends_and_zero_meaning():
    assert parse_number("0", "f", lo=0.0, hi=1.0, lo_open=True)[0] is None
    assert parse_number("1", "f", lo=0.0, hi=1.0, lo_open=True) == (1.0, None)
    assert parse_number("0", "cap", lo=50, hi=10**6, integer=True, zero="all rows") == (0, None)
    assert "or 0 = all rows" in parse_number("10", "cap", lo=50, hi=10**6, integer=True,
                                             zero="all rows")[1]


def _run_button(at, key):
    return at.button(key=key)


MEMBERSHIP = [("mi_members", "Members"), ("mi_epochs", "Epochs"), ("mi_shadows", "Shadows"),
              ("mi_refs", "RMIA refs"), ("mi_targets", "Targets pooled")]


@pytest.mark.parametrize("key, name", MEMBERSHIP)
@pytest.mark.parametrize("entry", ["", "abc", "100001"])
def test_membership_bad_entry_errors_disables_run_starts_nothing(store, key, name, entry):  # noqa: F811
    from dashboard.base.jobs import get_queue

    at = open_page("views/membership.py")
    before = get_queue().counts()
    at.text_input(key=text_key(key)).set_value(entry).run()
    assert not at.exception, at.exception
    errors = [e.value for e in at.error]
    assert any(e.startswith(f"{name}: ") and "allowed range" in e for e in errors), errors
    assert at.button(key="mi_run").disabled
    at.run()  # a rerun (any other widget moved) starts nothing either
    assert at.session_state[key] is None
    assert len(store.list()) == 0 and get_queue().counts() == before
    # the box shows what was typed (not the minimum, not the last valid value)
    assert at.text_input(key=text_key(key)).value == entry


def test_membership_pre_run_box_reads_the_config(store):  # noqa: F811
    at = open_page("views/membership.py")
    at.text_input(key=text_key("mi_members")).set_value("300").run()
    at.text_input(key=text_key("mi_shadows")).set_value("8").run()
    at.text_input(key=text_key("mi_targets")).set_value("3").run()
    box = [i.value for i in at.info if "No stored result" in i.value]
    assert box and "300 members" in box[0] and "8 shadow models" in box[0], box
    assert "3 target(s) pooled" in box[0] and "about" in box[0] and "timed" in box[0]
    assert box[0].startswith("No stored result for these settings yet. Press **Run** (digits,")
    assert not at.button(key="mi_run").disabled


#: page -> (its Run button's key, the number boxes it draws at its defaults)
PAGES = {
    "views/attribute_privacy.py": ("ap_run", ["ap_devices", "ap_rounds", "ap_fraction",
                                              "ap_epochs", "ap_adv_steps", "ap_batch", "ap_lr",
                                              "ap_max_samples", "ap_proj_points", "ap_adv_lr"]),
    "views/property.py": ("pr_run", ["pr_per_bin", "pr_epochs"]),
    "views/reconstruction.py": ("gl_run", ["gl_epochs", "gl_targets", "gl_batch", "gl_iters",
                                           "gl_local_steps"]),
    "views/repr_reconstruction.py": ("rr_run", ["rr_epochs", "rr_targets"]),
    "views/fisher_information.py": ("fi_run", ["fi_k", "fi_T", "fi_trials"]),
    "views/membership.py": ("mi_run", ["mi_members", "mi_epochs", "mi_shadows", "mi_refs",
                                       "mi_targets", "privlab_seed"]),
}
#: empty, non-numeric, out of range (every range here starts at 0 or above)
BAD = ("", "12abc", "-5")


@pytest.mark.parametrize("page", list(PAGES))
def test_every_number_box_of_a_page_refuses_bad_entries(store, page):  # noqa: F811
    from dashboard.base.jobs import get_queue

    run_key, keys = PAGES[page]
    at = open_page(page)
    before, stored = get_queue().counts(), len(store.list())  # a page may run its default
    assert not at.button(key=run_key).disabled
    for key in keys:
        box = at.text_input(key=text_key(key))
        good = box.value
        for entry in BAD:
            at.text_input(key=text_key(key)).set_value(entry).run()
            assert not at.exception, (key, entry, at.exception)
            errors = [e.value for e in at.error]
            assert len(errors) == 1 and "allowed range" in errors[0], (key, entry, errors)
            assert at.button(key=run_key).disabled, (key, entry)
            assert at.session_state[key] is None, (key, entry)
            assert at.text_input(key=text_key(key)).value == entry  # shown as typed
        at.text_input(key=text_key(key)).set_value(good).run()
        assert not at.button(key=run_key).disabled, (key, [e.value for e in at.error])
    assert len(store.list()) == stored and get_queue().counts() == before


def test_a_hidden_box_does_not_keep_run_off(store):  # noqa: F811
    at = open_page("views/reconstruction.py")
    at.selectbox(key="gl_defense").set_value("dp_sgd").run()
    at.text_input(key=text_key("gl_clip")).set_value("").run()
    assert at.button(key="gl_run").disabled
    at.selectbox(key="gl_defense").set_value("none").run()  # the clip box is gone
    assert not at.button(key="gl_run").disabled, [e.value for e in at.error]


def test_a_preset_or_copied_value_replaces_the_text(store):  # noqa: F811
    at = open_page("views/attribute_privacy.py")
    at.text_input(key=text_key("ap_devices")).set_value("").run()
    assert at.button(key="ap_run").disabled
    at.segmented_control(key="ap_preset").set_value("paper").run()
    assert at.text_input(key=text_key("ap_devices")).value == "100"
    assert at.session_state["ap_devices"] == 100 and not at.button(key="ap_run").disabled
