// Subscriptions and triggers of an entity: what each observes, how, until when; delete.
import {api, enc, get, vx} from './api.js';
import {clear, errorBox, every, h} from './dom.js';

export function renderPush(el, ent) {
  const subs = h('div', {});
  const trigs = h('div', {});
  const msg = h('div', {});
  clear(el, msg, h('h3', {}, 'Cyclic subscriptions'), subs, h('h3', {}, 'Triggers'), trigs);
  const remove = async (url) => {
    msg.replaceChildren();
    try { await api('DELETE', url); await load(); } catch (e) { msg.replaceChildren(errorBox(e)); }
  };
  const load = async () => {
    const [s, t] = await Promise.allSettled([get(`${ent.path}/cyclic-subscriptions`), get(`${ent.path}/triggers`)]);
    if (s.status === 'fulfilled') drawSubs(subs, ent, s.value.items || [], remove); else clear(subs, errorBox(s.reason));
    if (t.status === 'fulfilled') drawTriggers(trigs, ent, t.value.items || [], remove); else clear(trigs, errorBox(t.reason));
  };
  return every(3000, load);
}

function drawSubs(el, ent, items, remove) {
  if (!items.length) { clear(el, h('p', {class: 'muted'}, 'None.')); return; }
  clear(el, h('table', {class: 'subs'},
    h('tr', {}, h('th', {}, 'Id'), h('th', {}, 'Observes'), h('th', {}, 'Interval'), h('th', {}, 'Client'), h('th', {}, 'Until'), h('th', {}, '')),
    items.map((s) => h('tr', {class: 'sub', 'data-sub': s.id},
      h('td', {class: 'mono'}, s.id), h('td', {class: 'mono'}, s.observed_resource), h('td', {}, s.interval),
      h('td', {}, vx(s).client_id || ''), h('td', {}, vx(s).expires_at ? new Date(vx(s).expires_at).toLocaleTimeString() : ''),
      h('td', {}, h('button', {type: 'button', class: 'danger', onclick: () => remove(`${ent.path}/cyclic-subscriptions/${enc(s.id)}`)}, 'Delete'))))));
}

function drawTriggers(el, ent, items, remove) {
  if (!items.length) { clear(el, h('p', {class: 'muted'}, 'None.')); return; }
  clear(el, h('table', {class: 'triggers'},
    h('tr', {}, h('th', {}, 'Id'), h('th', {}, 'Observes'), h('th', {}, 'Condition'), h('th', {}, 'Status'), h('th', {}, ''), h('th', {}, '')),
    items.map((t) => h('tr', {class: 'trigger', 'data-trigger': t.id},
      h('td', {class: 'mono'}, t.id), h('td', {class: 'mono'}, t.observed_resource + (t.path ? ` ${t.path}` : '')),
      h('td', {class: 'mono'}, JSON.stringify(t.trigger_condition || {})), h('td', {}, t.status || ''),
      h('td', {class: 'muted'}, [t.multishot ? 'multishot' : 'once', t.persistent ? 'persistent' : ''].filter(Boolean).join(', ')),
      h('td', {}, h('button', {type: 'button', class: 'danger', onclick: () => remove(`${ent.path}/triggers/${enc(t.id)}`)}, 'Delete'))))));
}
