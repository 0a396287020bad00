"""Every scenario id of tests/sdk/SCENARIOS.md is covered by a test here,
so that a scenario added to the kit and missing from this SDK fails."""
from __future__ import annotations

import glob
import os
import re

from conftest import KIT_DIR


def test_every_scenario_has_a_test() -> None:
    with open(os.path.join(KIT_DIR, "SCENARIOS.md")) as f:
        ids = set(re.findall(r"^\| `([a-z_.]+)` \|", f.read(), re.M))
    assert len(ids) > 50
    covered = set()
    for path in glob.glob(os.path.join(os.path.dirname(__file__),
                                       "test_*.py")):
        with open(path) as f:
            covered |= set(re.findall(r'sc\("([a-z_.]+)"\)', f.read()))
    assert sorted(ids - covered) == []
    assert sorted(covered - ids) == []
