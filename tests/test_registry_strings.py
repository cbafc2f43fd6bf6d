"""Every ``"module:attr"`` string privlab names an object by resolves (DESIGN: Architecture,
"Parts reference code by object, or by strings a test resolves").

One test over the whole registry: every entry of every :class:`core.foundation.registry.Registry` (a
part's builder, per-family builders, readouts, attack and signal functions, families'
exposure extractors, runners, FL objectives) and every object-path constant in the source (the
data sets' loaders) imports, so a misspelt one fails here rather than seconds into a run.
"""

from __future__ import annotations

from dataclasses import replace

from benchmarks import registry_bench as R
from core.foundation.parts import DEFENSES


def test_every_object_path_resolves():
    sites = R.dotted_string_sites()
    assert len(sites) > 40, "the collector found too few object paths: it misses the registries"
    assert R.unresolved_dotted_strings() == []


def test_a_misspelt_builder_is_found():
    part = replace(DEFENSES.get("relaxloss"), name="tmp_misspelt",
                   builder="core.catalog.relaxloss:no_such_builder")
    DEFENSES.register("tmp_misspelt", part)
    try:
        bad = R.unresolved_dotted_strings()
    finally:
        DEFENSES.unregister("tmp_misspelt")
    assert any(b.startswith("defense:tmp_misspelt: core.catalog.relaxloss:no_such_builder")
               for b in bad), bad
