// Events the fault stream did not bring: each fault list read is compared with the one before;
// a change no stream event told of within a grace period is reported as missed, per robot.
import {vx} from './api.js';
import {statusOf} from './faultshape.js';

export const GRACE_MS = 6000;  // a stream event may reach the page a little after the list

export function faultKey(fault, vendor) {
  return `${(vendor || vx(fault)).peer || 'local'}|${fault.fault_code}`;
}

// Status and first occurrence: a new episode or a status change sends an event, a repeat of
// an open fault (its count and last time) does not.
function signature(f) {
  const x = vx(f);
  return [statusOf(f), x.first_occurrence ?? f.first_occurred ?? ''].join('|');
}

export class MissedEvents {
  constructor() {
    this.sigs = null;  // key -> signature of the last list read (null before the first)
    this.heard = new Map();  // key -> when the stream last brought an event of it
    this.suspects = new Map();  // key -> {since, fault}
    this.byRobot = new Map();  // robot -> changes that came from the list only
  }

  // The stream brought an event of this fault.
  heardOf(fault, vendor, now = Date.now()) {
    if (fault && fault.fault_code) this.heard.set(faultKey(fault, vendor), now);
  }

  // A fresh list: returns the faults whose change the stream missed (past the grace period).
  read(faults, now = Date.now()) {
    const first = this.sigs === null;
    const sigs = new Map();
    for (const f of faults) {
      const k = faultKey(f);
      const sig = signature(f);
      sigs.set(k, sig);
      if (!first && this.sigs.get(k) !== sig && !this.suspects.has(k)) this.suspects.set(k, {since: now, fault: f});
    }
    this.sigs = sigs;
    const missed = [];
    for (const [k, s] of this.suspects) {
      if ((this.heard.get(k) || 0) >= s.since - GRACE_MS) { this.suspects.delete(k); continue; }
      if (now - s.since < GRACE_MS) continue;
      this.suspects.delete(k);
      const robot = vx(s.fault).peer || 'local';
      this.byRobot.set(robot, (this.byRobot.get(robot) || 0) + 1);
      missed.push(s.fault);
    }
    return missed;
  }
}
