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

// Active (its condition still present) versus passed (healed, or pre-passed: the reporter
// says the condition is gone while the fault is still listed).
export function isPassed(f) {
  const st = statusOf(f);
  return st === 'HEALED' || st === 'PREPASSED' || st === 'CLEARED';
}
