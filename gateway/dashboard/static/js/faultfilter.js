// Fault filters (severity, status, robot, code, time, text) and grouping by code across robots.
import {vx} from './api.js';
import {h} from './dom.js';
import {isPassed, lastTime, messageOf, severityOf, statusOf} from './faultshape.js';

const SEVERITIES = ['CRITICAL', 'ERROR', 'WARN', 'INFO'];
const WINDOWS = [['', 'any time'], ['600', 'last 10 min'], ['3600', 'last hour'], ['86400', 'last day']];

export const filterState = {severity: '', status: '', robot: '', code: '', since: '', text: '', group: false};

export function robotOf(f) {
  return vx(f).peer || 'local';
}

// The faults that pass every filter (pure: explicit now).
export function filterFaults(faults, st, now = Date.now()) {
  const text = st.text.trim().toLowerCase();
  const code = st.code.trim().toLowerCase();
  return faults.filter((f) => {
    if (st.severity && severityOf(f) !== st.severity) return false;
    if (st.status === 'active' && isPassed(f)) return false;
    if (st.status === 'passed' && !isPassed(f)) return false;
    if (st.status && st.status !== 'active' && st.status !== 'passed' && statusOf(f) !== st.status) return false;
    if (st.robot && robotOf(f) !== st.robot) return false;
    if (code && !String(f.fault_code).toLowerCase().includes(code)) return false;
    if (st.since) {
      const t = lastTime(f);
      if (!Number.isFinite(t) || now - t > Number(st.since) * 1000) return false;
    }
    if (text && ![f.fault_code, messageOf(f), f.source, robotOf(f)].some((v) => String(v || '').toLowerCase().includes(text))) return false;
    return true;
  });
}

// One group per fault code: its robots, worst severity, active and passed counts, newest time.
export function groupByCode(faults) {
  const groups = new Map();
  for (const f of faults) {
    let g = groups.get(f.fault_code);
    if (!g) groups.set(f.fault_code, (g = {code: f.fault_code, faults: [], robots: new Set(), worst: SEVERITIES.length, active: 0, passed: 0, last: NaN, message: messageOf(f)}));
    g.faults.push(f);
    g.robots.add(robotOf(f));
    const i = SEVERITIES.indexOf(severityOf(f));
    if (i >= 0 && i < g.worst) g.worst = i;
    if (isPassed(f)) g.passed++; else g.active++;
    const t = lastTime(f);
    if (Number.isFinite(t) && !(t <= g.last)) g.last = t;
  }
  return [...groups.values()].sort((a, b) => a.worst - b.worst || b.robots.size - a.robots.size || a.code.localeCompare(b.code));
}

export function severityName(i) {
  return SEVERITIES[i] || '';
}

// The filter bar; onChange() after every edit. Robots come from robots().
export function filterBar(onChange, robots) {
  const sel = (name, options) => {
    const el = h('select', {name: `f-${name}`}, options.map(([v, label]) => h('option', {value: v}, label)));
    el.value = filterState[name];
    el.addEventListener('change', () => { filterState[name] = el.value; onChange(); });
    return el;
  };
  const input = (name, placeholder) => {
    const el = h('input', {type: 'search', name: `f-${name}`, placeholder, value: filterState[name]});
    el.addEventListener('input', () => { filterState[name] = el.value; onChange(); });
    return el;
  };
  const robot = sel('robot', [['', 'every robot']]);
  const refreshRobots = () => {
    const have = new Set([...robot.options].map((o) => o.value));
    for (const r of robots()) if (!have.has(r)) robot.append(h('option', {value: r}, r));
  };
  const group = h('input', {type: 'checkbox', name: 'f-group', checked: filterState.group});
  group.addEventListener('change', () => { filterState.group = group.checked; onChange(); });
  const bar = h('div', {class: 'row filters'},
    sel('severity', [['', 'any severity'], ...SEVERITIES.map((s) => [s, s])]),
    sel('status', [['', 'any status'], ['active', 'active'], ['passed', 'passed'], ['CONFIRMED', 'confirmed'], ['PREFAILED', 'pending']]),
    robot, input('code', 'code'), sel('since', WINDOWS), input('text', 'search'),
    h('label', {}, group, ' group by code'));
  bar.refreshRobots = refreshRobots;
  return bar;
}
