"""Fault triggers: threshold rules on app topics raising and clearing faults in the fault manager."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ApiError, invalid_parameter
from ..events import DATA, Event, body_of
from ..faults.model import FAILED, Report
from ..model.resource_uris import topic_matches
from ..model.runids import new_id
from ..process.storage import StorageWriteError, log_write_failure
from .fault_rules import SEVERITIES, Rule, crossed, extract, from_record, parse_rule
from .settings import FaultTriggerSettings
from .topics import TopicWatch

if TYPE_CHECKING:
    from ..faults.service import FaultService
    from ..http.state import GatewayState

log = logging.getLogger(__name__)

STORE = "fault-triggers"  # the rules file's name in storage health and 507 messages


class FaultTriggerEngine:
    """Rules by id; DATA events latch them at once, a poll re-reports crossed ones."""

    def __init__(self, state: GatewayState, topics: TopicWatch, faults: FaultService) -> None:
        ft = state.settings.typed(FaultTriggerSettings.from_settings)
        self.state, self.faults = state, faults
        self.topics = topics
        self.enabled = ft.enabled
        self.poll_s = ft.poll_interval_ms / 1000.0  # at least 50 ms, checked at load
        self.path = Path(ft.storage_path).expanduser() if ft.storage_path else None
        self.rules: dict[str, Rule] = {}
        self._off: Any = None
        self._task: asyncio.Task[None] | None = None
        self._crossed = asyncio.Event()  # set when a rule crosses: the poll has work again
        self.reports = 0
        self.clears = 0

    # lifecycle ------------------------------------------------------------------------------
    async def start(self) -> None:
        """Load stored rules, listen to samples, start the poll."""
        stored = self._load()
        if self.path is not None:  # a full disk at start: /health names the store at once
            await asyncio.to_thread(self.state.storage.check, STORE, self.path.parent)
        cap = self.state.settings.typed(FaultTriggerSettings.from_settings).max_rules
        if len(stored) > cap:
            log.warning("setting 'fault_triggers.max_rules': %d stored rules, %d kept",
                        len(stored), cap)
        for rule in stored[:cap]:
            self._add(rule)
        self._off = self.state.events.subscribe([DATA], self._on_sample)
        self._task = asyncio.ensure_future(self._poll())

    async def stop(self) -> None:
        """Stop listening and polling."""
        if self._off is not None:
            self._off()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    # rules ----------------------------------------------------------------------------------
    def create(self, app: Any, body: Any) -> Rule:
        """A new rule on an app (400 bad field or unknown topic, 409 fault_code in use)."""
        rule = parse_rule(body, new_id("ftr"), app.id)
        if any(r.fault_code == rule.fault_code for r in self.rules.values()):
            raise ApiError(409, "invalid-request",
                           f"fault_code '{rule.fault_code}' is already raised by another "
                           "fault-trigger rule; delete that rule or pick another code")
        self._check_topic(app, rule)
        self._add(rule)
        try:
            self._save(strict=True)
        except StorageWriteError:  # not stored: not created either (507)
            self.rules.pop(rule.id, None)
            self.topics.drop(rule)
            raise
        return rule

    def _check_topic(self, app: Any, rule: Rule) -> None:
        from ..data.topics import (  # noqa: PLC0415 - gateway.ros, aiohttp only for topic rules
            entity_topics,
        )

        topics = list(entity_topics(self.state, app))
        if not topics or any(topic_matches(t, rule.topic_path) for t in topics):
            return
        import difflib  # noqa: PLC0415 - only on a bad rule: not held from start

        close = difflib.get_close_matches(rule.topic_path, topics, n=1, cutoff=0.0)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        raise invalid_parameter(f"App '{app.id}' has no data item '{rule.data_name}'{hint}")

    def _add(self, rule: Rule) -> None:
        self.rules[rule.id] = rule
        self.topics.want(rule, "apps", rule.app_id, rule.topic_path, events=True)

    def of_app(self, app_id: str) -> list[Rule]:
        """Rules of one app."""
        return [r for r in self.rules.values() if r.app_id == app_id]

    def delete(self, rule: Rule) -> None:
        """Remove a rule; a crossed one clears its fault."""
        self.rules.pop(rule.id, None)
        try:
            self._save(strict=True)
        except StorageWriteError:  # still stored: still a rule (507)
            self.rules[rule.id] = rule
            raise
        self.topics.drop(rule)
        if rule.crossed:
            self._clear(rule)

    # evaluation -----------------------------------------------------------------------------
    def _on_sample(self, event: Event[Any]) -> None:
        for rule in tuple(self.rules.values()):
            if not rule.active or self.topics.topic_of(rule) != event.resource:
                continue
            value = extract(body_of(event), rule.pointer, event.resource)
            if value is None:
                continue  # unreadable: hold state
            rule.value = value
            now_crossed = crossed(value, rule.operator, rule.threshold)
            if now_crossed and not rule.crossed:
                rule.crossed = True
                self._crossed.set()
                self._report(rule)
                self._save()
            elif not now_crossed and rule.crossed:
                rule.crossed = False
                self._clear(rule)
                self._save()

    async def _poll(self) -> None:
        while True:
            if not any(rule.crossed for rule in self.rules.values()):
                self._crossed.clear()  # nothing to repeat: no wake-up until a rule crosses
                await self._crossed.wait()
            await asyncio.sleep(self.poll_s)
            for rule in tuple(self.rules.values()):
                if rule.active and rule.crossed and rule.value is not None:
                    self._report(rule)  # level-triggered while crossed

    def _source(self, rule: Rule) -> str:
        app = self.state.cache.entities.get("apps", rule.app_id)
        return app.node_fqn if app is not None and app.node_fqn else rule.app_id

    def _report(self, rule: Rule) -> None:
        svc = self.faults
        value = rule.value if rule.value is not None else rule.threshold
        svc.submit([Report(rule.fault_code, FAILED, SEVERITIES[rule.severity],
                           rule.description(value), self._source(rule))])
        self.reports += 1

    def _clear(self, rule: Rule) -> None:
        svc = self.faults
        svc.clear([rule.fault_code], scope=())  # no correlation cascade
        self.clears += 1

    # persistence ----------------------------------------------------------------------------
    def _load(self) -> list[Rule]:
        if self.path is None or not self.path.exists():
            return []
        try:
            records = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            log.error("setting 'fault_triggers.storage.path': %s is unreadable (%s); "
                      "starting without rules", self.path, exc)
            return []
        rules = [from_record(r) for r in records if isinstance(r, dict)] \
            if isinstance(records, list) else []
        good = [r for r in rules if r is not None]
        if len(good) != len(rules):
            log.warning("%d malformed fault-trigger rules dropped from %s",
                        len(rules) - len(good), self.path)
        return good

    def _save(self, strict: bool = False) -> None:
        """Write the rules file; a failure raises StorageWriteError when strict (a request
        waits), else it is logged once and /health degraded (the next save catches up)."""
        if self.path is None:
            return
        data = json.dumps([r.record() for r in self.rules.values()], indent=1)
        tmp = None
        try:
            with self.state.storage.writing(STORE, self.path.parent):
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".fault_triggers")
                    with os.fdopen(fd, "w", encoding="utf-8") as out:
                        out.write(data)
                    os.replace(tmp, self.path)
                except BaseException:
                    if tmp is not None:
                        Path(tmp).unlink(missing_ok=True)
                    raise
        except StorageWriteError as exc:
            if strict:
                raise
            log_write_failure(log, "fault-trigger rules could not be written to %s",
                              str(self.path), exc)

    def health(self) -> dict[str, Any]:
        """Figures for /health."""
        return {"rules": len(self.rules),
                "crossed": sum(1 for r in self.rules.values() if r.crossed),
                "reports": self.reports, "clears": self.clears,
                "poll_interval_ms": round(self.poll_s * 1000)}
