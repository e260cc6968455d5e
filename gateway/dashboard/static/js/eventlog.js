// The fleet timeline's events (pure): real state changes only; a repeat of a fault's last
// state (same robot, code, event and status, e.g. a message whose number moved) updates that
// row's count and time instead of adding one.
import {ctx} from './api.js';
import {statusOf} from './faultshape.js';

export const MAX_EVENTS = 500;

function faultKey(e) {
  const f = e.data.fault || {};
  const x = e.data[ctx.xv] || {};
  return `${x.peer || ''}|${x.entity_id || ''}|${f.fault_code || ''}`;
}

function stateKey(e) {
  const f = e.data.fault || {};
  return `${e.data.event_type || e.type}|${statusOf(f)}|${f.severity ?? ''}|${f.severity_label ?? ''}`;
}

// Add ev ({at, id, type, data}) to events (sorted by at, oldest first); returns the event
// removed past MAX_EVENTS, if any. A repeat sets count, first and at on the existing row.
export function addEvent(events, ev) {
  const key = faultKey(ev);
  let last = null;
  for (let i = events.length - 1; i >= 0 && !last; i--) if (faultKey(events[i]) === key) last = events[i];
  if (last && key !== '||' && stateKey(last) === stateKey(ev)) {
    last.count = (last.count || 1) + 1;
    last.first = last.first ?? last.at;
    if (ev.at >= last.at) { last.at = ev.at; last.data = ev.data; last.id = ev.id ?? last.id; }
    last.version = (last.version || 0) + 1;
    events.sort((a, b) => a.at - b.at);
    return null;
  }
  events.push(ev);
  events.sort((a, b) => a.at - b.at);
  return events.length > MAX_EVENTS ? events.shift() : null;
}
