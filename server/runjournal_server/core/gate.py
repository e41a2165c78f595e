"""The resume gate: may a worker with this fingerprint resume this run? Pure.

A fingerprint records the configuration a run's conversation was written
under. Each field has a class that says what a difference costs:

* hard (``provider``): refused, even when forced: a conversation (thinking
  signatures, opaque provider blocks, call ids) does not move between
  providers.
* blocking (``model``, ``system_prompt_sha256``, ``thinking_mode``): refused
  unless forced.
* tools (``tools_sha256``): refused unless forced while a pending batch
  exists, because its stored calls would run against a changed tool set;
  allowed otherwise.
* budget (``max_tokens``, ``max_iterations``): allowed and reported.

The system prompt is only ever a hash here, never its text. A resume reminder
(text the server offers for the worker to add to its system prompt) is never
part of the fingerprint: the worker computes the fingerprint before adding
it, so a reminder cannot make a run look reconfigured.

The gate only reports. ``runs/runs.py`` refuses a blocked resume, and writes a
``reconfigure`` record when an allowed one crossed a difference (then sets
``GateReport.reconfigured``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from runjournal.v1.records_pb2 import Fingerprint
from runjournal.v1.state_pb2 import FieldClass, FieldDifference, GateReport

FIELD_CLASSES: Mapping[str, FieldClass] = MappingProxyType(
    {
        "provider": FieldClass.FIELD_CLASS_HARD,
        "model": FieldClass.FIELD_CLASS_BLOCKING,
        "system_prompt_sha256": FieldClass.FIELD_CLASS_BLOCKING,
        "thinking_mode": FieldClass.FIELD_CLASS_BLOCKING,
        "tools_sha256": FieldClass.FIELD_CLASS_TOOLS,
        "max_tokens": FieldClass.FIELD_CLASS_BUDGET,
        "max_iterations": FieldClass.FIELD_CLASS_BUDGET,
    }
)
"""The class of every ``Fingerprint`` field, by proto field name."""


def blocks(field_class: FieldClass, *, has_pending: bool, force: bool) -> bool:
    """True when a difference in a field of ``field_class`` refuses the resume."""
    if field_class == FieldClass.FIELD_CLASS_HARD:
        return True
    if field_class == FieldClass.FIELD_CLASS_BLOCKING:
        return not force
    if field_class == FieldClass.FIELD_CLASS_TOOLS:
        return has_pending and not force
    if field_class == FieldClass.FIELD_CLASS_BUDGET:
        return False
    raise ValueError(f"field class {field_class} has no gate rule")


def check_resume(stored: Fingerprint, requested: Fingerprint, *, has_pending: bool, force: bool) -> GateReport:
    """Compare the run's fingerprint in force with the resuming worker's.

    Reports every differing field in ``Fingerprint`` field order, with its
    class and whether it blocks; ``allowed`` is true when none blocks.
    ``reconfigured`` is left false: the caller sets it after writing the
    ``reconfigure`` record.
    """
    report = GateReport(forced=force)
    for field in Fingerprint.DESCRIPTOR.fields:
        field_class = FIELD_CLASSES.get(field.name)
        if field_class is None:
            raise ValueError(f"Fingerprint field {field.name!r} has no gate class; add it to FIELD_CLASSES")
        before, after = getattr(stored, field.name), getattr(requested, field.name)
        if before == after:
            continue
        report.differences.append(
            FieldDifference(
                field=field.name,
                field_class=field_class,
                stored=str(before),
                requested=str(after),
                blocks=blocks(field_class, has_pending=has_pending, force=force),
            )
        )
    report.allowed = not any(d.blocks for d in report.differences)
    return report


def changed_fields(report: GateReport) -> list[str]:
    """The differing fields, by proto field name (``Reconfigure.changed_fields``)."""
    return [d.field for d in report.differences]


def blocking_fields(report: GateReport) -> list[str]:
    """The fields whose difference refuses the resume (``ResumeRefusedError``)."""
    return [d.field for d in report.differences if d.blocks]


def has_hard_block(report: GateReport) -> bool:
    """True when forcing cannot help: a hard field differs."""
    return any(d.blocks and d.field_class == FieldClass.FIELD_CLASS_HARD for d in report.differences)
