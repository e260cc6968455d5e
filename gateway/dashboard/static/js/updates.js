// Software updates (/updates): registered packages with status, phase and progress; register,
// prepare, execute, automated, delete.
import {api, enc, get, vx} from './api.js';
import {clear, errorBox, every, h} from './dom.js';

const EXAMPLE = '{"id": "nav_2_1", "update_name": "navigation", "automated": true, "origins": ["remote"]}';

export function renderUpdates(main) {
  const list = h('div', {id: 'updates'}, h('p', {class: 'muted'}, 'Loading updates…'));
  const msg = h('div', {});
  const body = h('textarea', {name: 'registration', rows: 3}, EXAMPLE);
  const register = async (e) => {
    e.preventDefault();
    msg.replaceChildren();
    let parsed;
    try { parsed = JSON.parse(body.value); } catch (x) { msg.replaceChildren(errorBox(new Error(`the registration is not JSON: ${x.message}`))); return; }
    try { await api('POST', '/updates', {body: parsed}); await load(); } catch (x) { msg.replaceChildren(errorBox(x)); }
  };
  const act = async (method, path, body) => {
    msg.replaceChildren();
    try { await api(method, path, body ? {body} : {}); await load(); } catch (x) { msg.replaceChildren(errorBox(x)); }
  };
  const load = async () => {
    try {
      const ids = ((await get('/updates')).items || []).map((i) => (typeof i === 'string' ? i : i.id));
      const rows = await Promise.all(ids.map(async (id) => {
        try { return [id, await get(`/updates/${enc(id)}/status`)]; } catch (e) { return [id, {error: {message: e.message}}]; }
      }));
      draw(list, rows, act);
    } catch (e) {
      clear(list, errorBox(e));
    }
  };
  clear(main, h('h2', {}, 'Software updates'), msg, list,
    h('form', {class: 'box update-form', onsubmit: register}, h('strong', {}, 'Register an update'),
      h('p', {class: 'muted'}, 'The registration body (docs/plugins.md): id, update_name, automated, origins, and a package to install.'),
      body, h('button', {type: 'submit', class: 'primary'}, 'Register')));
  return every(1000, load);
}

function draw(el, rows, act) {
  const sig = JSON.stringify(rows);
  if (el.dataset.sig === sig) return;  // unchanged: no redraw under the cursor
  el.dataset.sig = sig;
  if (!rows.length) { clear(el, h('p', {class: 'muted'}, 'No updates registered.')); return; }
  clear(el, h('table', {class: 'updates'},
    h('tr', {}, h('th', {}, 'Update'), h('th', {}, 'Status'), h('th', {}, 'Phase'), h('th', {}, 'Progress'), h('th', {}, '')),
    rows.map(([id, st]) => {
      const base = `/updates/${enc(id)}`;
      const busy = st.status === 'inProgress';
      return h('tr', {class: 'update', 'data-update': id, 'data-status': st.status || '', 'data-phase': vx(st).phase || ''},
        h('td', {class: 'mono'}, id),
        h('td', {}, st.status || '', st.error ? h('div', {class: 'error'}, st.error.message || '') : null),
        h('td', {}, vx(st).phase || ''),
        h('td', {}, st.progress != null ? h('progress', {max: 100, value: st.progress}) : null, st.progress != null ? ` ${st.progress}%` : '',
          (st.sub_progress || []).map((s) => h('div', {class: 'muted'}, `${s.name}: ${s.progress}%`))),
        h('td', {}, ['prepare', 'execute', 'automated'].map((op) =>
          h('button', {type: 'button', 'data-op': op, disabled: busy, onclick: () => act('PUT', `${base}/${op}`)}, op)), ' ',
          h('button', {type: 'button', class: 'danger', 'data-op': 'delete', disabled: busy, onclick: () => act('DELETE', base)}, 'delete')));
    })));
}
