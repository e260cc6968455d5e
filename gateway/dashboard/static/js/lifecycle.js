// Status and lifecycle: the entity's status, a managed node's lifecycle state and the
// progress of its last transition, and a button for each transition the status links.
import {api, get, vx} from './api.js';
import {clear, errorBox, every, h, json, selectionIn} from './dom.js';

const TRANSITIONS = ['start', 'restart', 'force-restart', 'shutdown', 'force-shutdown'];
const CONFIRM = new Set(['shutdown', 'force-shutdown', 'force-restart']);

export function renderStatus(el, ent) {
  const view = h('div', {});
  const msg = h('div', {});
  clear(el, view, msg);
  const load = async () => {
    try { draw(await get(`${ent.path}/status`)); } catch (e) { clear(view, errorBox(e)); }
  };
  const run = async (name) => {
    if (CONFIRM.has(name) && !confirm(`${name} ${ent.id}?`)) return;
    msg.replaceChildren();
    try {
      const answer = await api('PUT', `${ent.path}/status/${name}`);
      const steps = (answer.apps || []).map((a) => `${a.id}: ${(a.steps || []).join(', ') || 'nothing to do'}`);
      msg.replaceChildren(h('p', {class: 'ok'}, `${name} requested. `, steps.join('; ')));
      await load();
    } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  let last = null;
  const draw = (body) => {
    const sig = JSON.stringify(body);
    if (sig === last || selectionIn(view)) return;  // unchanged, or the person is selecting
    last = sig;
    const wasOpen = Boolean(view.querySelector('details[open]'));
    const life = vx(body).lifecycle || null;
    const tr = (life && life.transition) || null;
    const links = TRANSITIONS.filter((t) => body[t]);
    clear(view,
      h('div', {class: 'box status', 'data-status': body.status || ''},
        h('div', {}, 'Status: ', h('strong', {}, body.status || '?')),
        life ? h('div', {}, 'Lifecycle state: ', h('strong', {class: 'state', 'data-state': life.state || ''}, life.state || '?')) : null,
        tr ? h('div', {class: 'transition', 'data-transition': tr.status || ''}, 'Last transition: ', h('strong', {}, tr.name || tr.transition || ''), ` ${tr.status || ''}`,
          tr.done && tr.done.length ? ` (done: ${tr.done.join(', ')})` : '', tr.error ? h('div', {class: 'error'}, tr.error) : null) : null,
        links.length ? h('div', {class: 'row transitions'}, links.map((t) =>
          h('button', {type: 'button', 'data-transition': t, class: CONFIRM.has(t) ? 'danger' : '', onclick: () => run(t)}, t)))
          : h('p', {class: 'muted'}, 'No lifecycle control: this node offers no lifecycle services.')),
      h('details', {open: wasOpen}, h('summary', {}, 'status body'), json(body)));
  };
  return every(2000, load);
}
