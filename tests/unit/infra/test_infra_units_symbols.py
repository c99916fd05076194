"""The host's systemd units take the instrument list (issue 32 item 2): ``invoke deploy --symbols`` writes it into
the fleet's environment file, a oneshot ``caerus-instruments`` unit resolves it against both venues' listings at
every fleet start, and every process that trades reads the file it writes; a list that cannot go into a unit file
is refused before anything is done."""

from __future__ import annotations

import pytest

from infra import kernel
from infra.deploy import INSTRUMENTS_FILE, DeployError, units_step
from infra.facts import parse_facts
from tests.unit.infra.test_infra_units import EC2_PROBE

UNITS = "/etc/systemd/system"


def test_units_resolve_the_symbols_at_every_fleet_start_and_read_them() -> None:
    plan = kernel.target_plan(parse_facts(EC2_PROBE))
    files = {f.path: f.content for f in units_step(plan, "ec2-user", "live", " btc, ETH,PEPE=1000pepeusdt/kPEPE").files}
    assert "CAERUS_SYMBOLS=BTC,ETH,PEPE=1000PEPEUSDT/kPEPE\n" in files["/etc/caerus/fleet.env"]
    inst = files[f"{UNITS}/caerus-instruments.service"]
    assert "Type=oneshot" in inst and "PartOf=caerus-fleet.target" in inst and "User=ec2-user" in inst
    assert "caerus instruments --symbols ${CAERUS_SYMBOLS} --out-dir /var/lib/caerus/metrics" in inst
    assert "caerus-instruments.service" in files[f"{UNITS}/caerus-fleet.target"]
    for process in ("feed-binance", "feed-hyperliquid", "strategy", "execution"):
        unit = files[f"{UNITS}/caerus-{process}.service"]
        assert f"--instruments {INSTRUMENTS_FILE}" in unit, process
        assert "Requires=caerus-instruments.service" in unit and "After=network-online.target caerus-instruments" \
            in unit, process
    assert "--instruments" not in files[f"{UNITS}/caerus-capture.service"]  # capture reads every instrument's rows


@pytest.mark.parametrize(("symbols", "why"), [
    ("BTC,BTC", "lists BTC twice"),
    ("BTC,", "an empty entry"),
    ("X=A B/C", "only letters, digits"),
    ("X=AUSDT/C\nExecStartPre=/bin/sh", "only letters, digits"),
])
def test_a_symbol_list_that_cannot_go_into_a_unit_is_refused(symbols: str, why: str) -> None:
    plan = kernel.target_plan(parse_facts(EC2_PROBE))
    with pytest.raises(DeployError, match=why):
        units_step(plan, "ec2-user", "live", symbols)
