// Scripts: the entity's scripts, a run form from each one's parameters schema, the run's
// output as it comes (updated in place: a selection stays), and stop.
import {api, enc, get, vx} from './api.js';
import {clear, errorBox, h, selectionIn, setText} from './dom.js';
import {buildForm} from './form.js';

const POLL_MS = 500;
const ACTIVE = new Set(['prepared', 'running', 'pending']);

export function renderScripts(el, ent) {
  let gone = false;
  const timers = new Set();
  clear(el, h('p', {class: 'muted'}, 'Loading scripts…'));
  (async () => {
    let items;
    try { items = (await get(`${ent.path}/scripts`)).items || []; } catch (e) { if (!gone) clear(el, errorBox(e)); return; }
    if (gone) return;
    if (!items.length) { clear(el, h('p', {class: 'muted'}, 'No scripts for this entity.')); return; }
    clear(el, items.map((s) => scriptBox(ent, s, timers, () => gone)));
  })();
  return () => { gone = true; for (const t of timers) clearTimeout(t); };
}

function scriptBox(ent, script, timers, isGone) {
  const form = buildForm(script.parameters_schema, undefined);
  const out = h('div', {class: 'run'});
  const base = `${ent.path}/scripts/${enc(script.id)}/executions`;
  const start = async (e) => {
    e.preventDefault();
    clear(out);
    try {
      const body = {execution_type: 'now'};
      if (script.parameters_schema) body.parameters = form.value();
      const exec = await api('POST', base, {body});
      follow(`${base}/${enc(exec.id)}`, exec, out, timers, isGone);
    } catch (x) {
      out.append(errorBox(x));
    }
  };
  return h('div', {class: 'box script', 'data-script': script.id},
    h('div', {}, h('strong', {}, script.name || script.id), ' ', h('span', {class: 'muted mono'}, script.id)),
    script.description ? h('p', {class: 'muted'}, script.description) : null,
    h('form', {onsubmit: start}, script.parameters_schema ? form.el : null, h('button', {type: 'submit', class: 'primary'}, 'Run')),
    out);
}

function follow(url, first, out, timers, isGone) {
  const status = h('span', {class: 'pill exec-status'}, first.status || '');
  const stdout = h('pre', {class: 'stdout'});
  const stderr = h('pre', {class: 'stderr'});
  const msg = h('div', {});
  const stop = h('button', {type: 'button', class: 'danger stop', onclick: async () => {
    try { await api('PUT', url, {body: {action: 'stop'}}); } catch (e) { msg.replaceChildren(errorBox(e)); }
  }}, 'Stop');
  clear(out, h('div', {class: 'row'}, 'Run ', h('span', {class: 'mono'}, first.id), ' ', status, stop), msg,
    h('div', {class: 'muted'}, 'output'), stdout, h('div', {class: 'muted'}, 'errors'), stderr);
  const tick = async () => {
    if (isGone()) return;
    let body;
    try { body = await get(url); } catch (e) { msg.replaceChildren(errorBox(e)); return; }
    const p = body.parameters || {};
    status.textContent = body.status + (p.exit_code != null ? ` (exit ${p.exit_code})` : '') + (vx(body).ended_by ? `, ${vx(body).ended_by}` : '');
    status.dataset.status = body.status;
    if (!selectionIn(out)) { setText(stdout, p.stdout || ''); setText(stderr, p.stderr || ''); }
    if (body.error) msg.replaceChildren(errorBox(new Error(body.error.message || JSON.stringify(body.error))));
    if (ACTIVE.has(body.status)) {
      const t = setTimeout(() => { timers.delete(t); tick(); }, POLL_MS);
      timers.add(t);
    } else {
      stop.hidden = true;
    }
  };
  tick();
}
