"""The production units (deploy/systemd, deploy/alertmanager) are valid systemd units naming real hcep options."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNITS = sorted((ROOT / "deploy").glob("*/*.service"))


def test_there_are_units_for_every_part() -> None:
    names = {u.name for u in UNITS}
    assert {
        "hcep-run@.service",
        "hcep-collect-hadoop.service",
        "hcep-collect-ganglia.service",
        "hcep-dashboard.service",
        "hcep-alertmanager.service",
    } <= names


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_systemd_analyze_verifies_the_unit(unit: Path) -> None:
    if shutil.which("systemd-analyze") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("systemd-analyze is missing")
        pytest.skip("systemd-analyze is missing")
    proc = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    # Units the machine does not have (kafka.service, the hcep user) are the server's business, not errors here.
    problems = [
        line
        for line in proc.stderr.splitlines()
        if line.strip()
        and not re.search(
            r"(kafka|ganglia-monitor|hcep-alertmanager|hcep-run@0|network-online)\.(service|target)|Unknown user|"
            r"hcep\.env|No such file",
            line,
        )
    ]
    assert not problems, proc.stderr


@pytest.mark.parametrize(
    "unit", [u for u in UNITS if u.name.startswith("hcep-") and "alertmanager" not in u.name], ids=lambda p: p.name
)
def test_the_unit_uses_existing_hcep_options(unit: Path) -> None:
    """Every --option an hcep command line of the unit passes exists in that command's --help."""
    text = unit.read_text()
    command = re.search(r"hcep (run|collect hadoop|collect ganglia|dashboard)\b", text)
    assert command, unit
    words = command.group(1).split()
    help_text = subprocess.run(
        [sys.executable, "-m", "app.cli", *words, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    for option in set(re.findall(r" (--[a-z][a-z-]+)", text.split("ExecStart=", 1)[1].split("\n\n")[0])):
        assert option in help_text, (unit.name, option)
