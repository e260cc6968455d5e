// Fault fields in either wire profile: the spec's (severity label, x-<vendor>.status, ISO
// times) and medkit's (integer severity with severity_label, top-level status, epoch seconds).
import {vx} from './api.js';

const LABELS = ['INFO', 'WARN', 'ERROR', 'CRITICAL'];

export function severityOf(f) {
  if (!f) return '';
  if (typeof f.severity === 'number') return String(f.severity_label || LABELS[f.severity] || 'UNKNOWN').toUpperCase();
  const s = String(f.severity || f.severity_label || '').toUpperCase();
  return s === 'WARNING' ? 'WARN' : s;
}

export function statusOf(f) {
  const s = vx(f).status || f.status || '';
  return String(typeof s === 'object' ? (s.aggregatedStatus || '') : s).toUpperCase();
}

// Milliseconds since the epoch of an ISO string or of epoch seconds (medkit); NaN if neither.
export function millis(t) {
  if (typeof t === 'number') return t > 1e11 ? t : t * 1000;
  if (typeof t === 'string' && /^\d+(\.\d+)?$/.test(t)) return Number(t) * 1000;
  return Date.parse(t);
}

export function lastTime(f) {
  const x = vx(f);
  for (const t of [f.timestamp, x.last_occurrence, f.last_occurred]) {
    const ms = millis(t);
    if (Number.isFinite(ms)) return ms;
  }
  return NaN;
}

export function messageOf(f) {
  return f.message || f.description || '';
}

// Active (its condition still present) versus passed: healed or pre-passed, or a PASSED report
// (`last_passed`) newer than its last failure: with healing off (the default) a confirmed
// fault stays CONFIRMED, yet its condition is gone.
export function isPassed(f) {
  const st = statusOf(f);
  if (st === 'HEALED' || st === 'PREPASSED' || st === 'PASSED' || st === 'CLEARED') return true;
  const passed = millis(f.last_passed ?? vx(f).last_passed);
  return Number.isFinite(passed) && !(lastTime(f) > passed);
}

// Who reported a fault, readably: a node's name, or a plugin entity's (`/x-plugin/<plugin>/
// <kind>/<id>` is the gateway's internal key) as `<id> (<plugin> plugin)` or `<plugin> plugin`.
export function sourceOf(f) {
  const s = String(f.source || (f.reporting_sources || vx(f).reporting_sources || [])[0] || '');
  const m = /^\/x-plugin\/([^/]+)\/[^/]+\/([^/]+)$/.exec(s);
  return !m ? s : m[1] === m[2] ? `${m[1]} plugin` : `${m[2]} (${m[1]} plugin)`;
}
