// Operations: call a service, start an action and follow its feedback and result, cancel it.
import {api, enc, get, vx} from './api.js';
import {clear, errorBox, h, json} from './dom.js';
import {buildForm} from './form.js';

const STATUS_MS = 500;

export function renderOperations(el, ent) {
  let gone = false;
  const timers = new Set();
  clear(el, h('p', {class: 'muted'}, 'Loading operations…'));
  (async () => {
    let items;
    try { items = (await get(`${ent.path}/operations`)).items || []; } catch (e) { clear(el, errorBox(e)); return; }
    if (gone) return;
    if (!items.length) { clear(el, h('p', {class: 'muted'}, 'No services or actions.')); return; }
    clear(el, items.map((op) => opCard(ent, op, timers, () => gone)));
  })();
  return () => { gone = true; for (const t of timers) clearTimeout(t); };
}

function opCard(ent, op, timers, isGone) {
  const x = vx(op);
  const isAction = op.asynchronous_execution || x.ros2_kind === 'action';
  const info = x.type_info || {};
  const form = buildForm(isAction ? info.goal : info.request, {});
  const out = h('div', {class: 'result'});
  const base = `${ent.path}/operations/${enc(op.id)}/executions`;
  const run = async (e) => {
    e.preventDefault();
    clear(out, h('span', {class: 'muted'}, isAction ? 'Sending goal…' : 'Calling…'));
    try {
      const parameters = form.value();
      const res = await api('POST', base, {body: {parameters}, withResponse: true});
      if (!isAction || res.resp.status === 200) {
        clear(out, h('div', {class: 'ok'}, 'Response'), json(res.data.parameters ?? res.data));
        return;
      }
      follow(ent, base, res.data.id, out, timers, isGone);
    } catch (x2) {
      clear(out, errorBox(x2));
    }
  };
  return h('div', {class: 'box op', 'data-op': op.id},
    h('div', {class: 'row'}, h('strong', {class: 'mono'}, op.id), h('span', {class: 'pill'}, isAction ? 'action' : 'service'),
      h('span', {class: 'muted mono'}, x.ros2_type || op.service_type || op.action_type || ''),
      h('span', {class: 'muted mono'}, x.ros2_service || x.ros2_action || '')),
    h('form', {onsubmit: run}, form.el, h('button', {type: 'submit', class: 'primary'}, isAction ? 'Start' : 'Call')),
    out);
}

function follow(ent, base, execId, out, timers, isGone) {
  const url = `${base}/${enc(execId)}`;
  const status = h('span', {class: 'pill exec-status'}, 'running');
  const feedback = h('div', {class: 'feedback'});
  const result = h('div', {class: 'exec-result'});
  const err = h('div', {});
  const cancel = h('button', {type: 'button', class: 'danger', onclick: async () => {
    cancel.disabled = true;
    try { await api('PUT', url, {body: {capability: 'stop'}}); } catch (x) { err.replaceChildren(errorBox(x)); cancel.disabled = false; }
  }}, 'Cancel');
  clear(out, h('div', {class: 'row'}, 'Execution ', h('code', {}, execId), status, cancel), h('div', {class: 'muted'}, 'Feedback'), feedback, result, err);
  let feedbackCount = -1;
  const poll = async () => {
    if (isGone()) return;
    try {
      const s = await get(url);
      const x = vx(s);
      status.textContent = s.status + (x.ros2_status ? ` (${x.ros2_status})` : '');
      if (s.status === 'running') {
        if (x.feedback_count !== feedbackCount && s.parameters !== undefined) {
          feedbackCount = x.feedback_count;
          clear(feedback, h('div', {class: 'muted'}, `feedback #${feedbackCount}`), json(s.parameters));
        }
        const t = setTimeout(poll, STATUS_MS);
        timers.add(t);
        return;
      }
      cancel.disabled = true;
      clear(result, h('div', {class: s.status === 'completed' ? 'ok' : 'error'}, `Result (${s.status})`), json(s.parameters ?? s.result ?? null));
    } catch (e) {
      err.replaceChildren(errorBox(e));
    }
  };
  poll();
}
