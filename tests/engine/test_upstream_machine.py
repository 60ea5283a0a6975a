"""Machine status: upstream's TestSetUpdatingCondition and TestSetUpToDateCondition, ported as objects.

Other Machine tables (bootstrap/infrastructure mirroring, Node health, Ready, Available, deletion)
are read as reported or covered by tests/engine/test_machine.py, and left for the next pass.
"""

from __future__ import annotations

import dataclasses

import pytest

from exporter.engine.evaluate_types import Computed
from exporter.engine.machine import compute_machine
from exporter.engine.model import Base, Condition, Machine, MachineDeployment, MachineSet
from tests.engine.builders import NOW, T, capi_view, cond, machine, machine_deployment, machine_set
from tests.engine.upstream import Case, check, params

IN_MEMORY = ("the reason and message of a running in-place update come from the update's reconcile, not from "
             "an object; the engine gives upstream's defaults (InPlaceUpdating, \"In-place update in progress\")")
IN_PROGRESS = "in-place-updates.internal.cluster.x-k8s.io/update-in-progress"
HOUR = 3600.0


def run(m: Machine, *others: Base) -> Computed:
    return compute_machine(m, capi_view(m, *others), NOW)


def owned(*conditions: Condition, **fields: object) -> Machine:
    return machine("m", conditions, set_name="ms1", deployment_name="md1", **fields)


def ms(version: str = "v1.31.0", created_ago: float = HOUR) -> MachineSet:
    obj = machine_set("ms1", deployment_name="md1", version=version)
    return dataclasses.replace(obj, meta=dataclasses.replace(obj.meta, creation_timestamp=NOW - created_ago))


def md(version: str = "v1.31.0", rollout_after_in: float | None = None) -> MachineDeployment:
    after = None if rollout_after_in is None else NOW + rollout_after_in
    return machine_deployment("md1", version=version, rollout_after=after)


def up_to_date(m: Machine, *others: Base) -> Computed:
    return run(m, *others)


UPD, UTD = "TestSetUpdatingCondition", "TestSetUpToDateCondition"
UPDATING = cond("Updating", T, "InPlaceUpdating")

CASES = [
    Case(UPD, "A machine not in-place updating is not updating", lambda: run(machine("m", ())), "Updating",
         ("False", "NotUpdating", "")),
    Case(UPD, "A machine starting in-place update is updating",
         lambda: run(machine("m", (), update_in_progress=True)), "Updating", ("True", "foo", "bar"),
         differs=IN_MEMORY),
    Case(UPD, "A machine in-place updating is updating", lambda: run(machine("m", (), update_in_progress=True)),
         "Updating", ("True", "foo", "bar"), differs=IN_MEMORY),
    Case(UPD, "A machine stopping in-place updating is updating",
         lambda: run(machine("m", (), update_in_progress=True)), "Updating", ("True", "foo", "bar"),
         differs=IN_MEMORY),
    Case(UTD, "up-to-date", lambda: up_to_date(owned(), ms(), md()), "UpToDate", ("True", "UpToDate", "")),
    Case(UTD, "updating", lambda: up_to_date(owned(UPDATING), ms(), md()), "UpToDate",
         ("False", "Updating", "* In-place update in progress")),
    Case(UTD, "kubeletVersion out of sync",
         lambda: up_to_date(owned(version="v1.31.0", node_info={"kubeletVersion": "v1.30.0"}), ms(), md()),
         "UpToDate", ("False", "Updating", "* Node.status.nodeInfo.kubeletVersion v1.30.0, v1.31.0 required")),
    Case(UTD, "updating (message from Updating)",
         lambda: up_to_date(owned(cond("Updating", T, "InPlaceUpdating",
                                       "In-place update in progress: Extension is updating Machine")), ms(), md()),
         "UpToDate", ("False", "Updating", "* In-place update in progress: Extension is updating Machine")),
    Case(UTD, "not up-to-date", lambda: up_to_date(owned(), ms("v1.30.0"), md("v1.31.0")), "UpToDate",
         ("False", "NotUpToDate", "* Version v1.30.0, v1.31.0 required")),
    Case(UTD, "up-to-date, spec.rolloutAfter not expired",
         lambda: up_to_date(owned(), ms(created_ago=HOUR), md(rollout_after_in=HOUR)), "UpToDate",
         ("True", "UpToDate", "")),
    Case(UTD, "up-to-date, rollout After expired and a new MS created at rollout after time",
         lambda: up_to_date(owned(), ms(created_ago=HOUR), md(rollout_after_in=-HOUR)), "UpToDate",
         ("True", "UpToDate", "")),
    Case(UTD, "not up-to-date, rollout After expired",
         lambda: up_to_date(owned(), ms(created_ago=2 * HOUR), md(rollout_after_in=-HOUR)), "UpToDate",
         ("False", "NotUpToDate", "* MachineDeployment spec.rolloutAfter expired")),
    Case(UTD, "not up-to-date, rollout After expired and a new MS created",
         lambda: up_to_date(owned(), ms(created_ago=HOUR), md(rollout_after_in=-2 * HOUR)), "UpToDate",
         ("True", "UpToDate", "")),
    Case(UTD, "not up-to-date, version changed, rollout After expired",
         lambda: up_to_date(owned(), ms("v1.31.0", created_ago=2 * HOUR), md("v1.30.0", rollout_after_in=-HOUR)),
         "UpToDate", ("False", "NotUpToDate", "* Version v1.31.0, v1.30.0 required\n"
                                              "* MachineDeployment spec.rolloutAfter expired")),
]


@pytest.mark.parametrize("case", params(CASES))
def test_upstream_machine(case: Case) -> None:
    check(case)


# The two "no condition returned" cases: a Machine without a MachineDeployment gets no UpToDate.
@pytest.mark.parametrize("others", [(), (machine_set("ms1"),)], ids=[
    "TestSetUpToDateCondition/no-condition-returned-for-stand-alone-Machines",
    "TestSetUpToDateCondition/no-condition-returned-for-stand-alone-MachineSet"])
def test_upstream_machine_without_deployment_has_no_up_to_date(others: tuple[Base, ...]) -> None:
    m = machine("m", (), set_name="ms1" if others else "")
    assert run(m, *others).condition("UpToDate") is None
