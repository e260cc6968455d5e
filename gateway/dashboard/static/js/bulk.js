// Bulk data: categories and their files; download and upload with progress; delete uploads.
import {api, download, enc, get, saveBlob, upload, vx} from './api.js';
import {bytes, clear, errorBox, h, time} from './dom.js';

export function renderBulk(el, ent) {
  let gone = false;
  const writable = ent.type === 'apps' || ent.type === 'components';
  const load = async () => {
    let cats;
    try { cats = (await get(`${ent.path}/bulk-data`)).items || []; } catch (e) { clear(el, errorBox(e)); return; }
    const parts = await Promise.all(cats.map(async (c) => {
      try { return [c, (await get(`${ent.path}/bulk-data/${enc(c)}`)).items || [], null]; } catch (e) { return [c, [], e]; }
    }));
    if (gone) return;
    clear(el, parts.length ? parts.map(([c, items, err]) => category(ent, c, items, err, writable, load)) : h('p', {class: 'muted'}, 'No bulk-data categories.'));
  };
  clear(el, h('p', {class: 'muted'}, 'Loading bulk data…'));
  load();
  return () => { gone = true; };
}

function category(ent, cat, items, err, writable, reload) {
  const canWrite = writable && cat !== 'rosbags';
  return h('div', {class: 'box bulk', 'data-category': cat},
    h('h3', {}, cat, ' ', h('small', {class: 'muted'}, `${items.length} file(s)`)),
    err ? errorBox(err) : null,
    items.length ? h('table', {},
      h('tr', {}, h('th', {}, 'Name'), h('th', {}, 'Size'), h('th', {}, 'Created'), h('th', {}, 'About'), h('th', {}, '')),
      items.map((d) => fileRow(ent, cat, d, canWrite, reload))) : h('p', {class: 'muted'}, 'Empty.'),
    canWrite ? uploadForm(ent, cat, reload) : null);
}

function fileRow(ent, cat, d, canWrite, reload) {
  const x = vx(d);
  const progress = h('progress', {max: 1, value: 0, hidden: true});
  const msg = h('span', {});
  const path = `${ent.path}/bulk-data/${enc(cat)}/${enc(d.id)}`;
  const dl = h('button', {type: 'button', onclick: async () => {
    progress.hidden = false;
    try {
      const got = await download(path, (n, t) => { progress.max = t || d.size || 1; progress.value = n; });
      saveBlob(got.blob, got.name);
      msg.replaceChildren(h('span', {class: 'ok'}, 'Downloaded'));
    } catch (e) { msg.replaceChildren(errorBox(e)); }
  }}, 'Download');
  const del = canWrite ? h('button', {type: 'button', class: 'danger', onclick: async () => {
    try { await api('DELETE', path); reload(); } catch (e) { msg.replaceChildren(errorBox(e)); }
  }}, 'Delete') : null;
  const about = x.fault_codes ? `faults: ${x.fault_codes.join(', ')}` : (d.description || '');
  return h('tr', {'data-file': d.id}, h('td', {class: 'mono'}, d.name || d.id), h('td', {}, bytes(d.size)),
    h('td', {}, time(d.creation_date)), h('td', {}, about), h('td', {}, dl, del, progress, msg));
}

function uploadForm(ent, cat, reload) {
  const file = h('input', {type: 'file', name: 'file', required: true});
  const desc = h('input', {type: 'text', name: 'description', placeholder: 'description'});
  const progress = h('progress', {max: 1, value: 0, hidden: true});
  const msg = h('span', {});
  const submit = async (e) => {
    e.preventDefault();
    if (!file.files.length) return;
    const fd = new FormData();
    fd.append('file', file.files[0]);
    if (desc.value) fd.append('description', desc.value);
    progress.hidden = false;
    msg.replaceChildren();
    try {
      await upload(`${ent.path}/bulk-data/${enc(cat)}`, fd, (n, t) => { progress.max = t || 1; progress.value = n; });
      reload();
    } catch (x) {
      msg.replaceChildren(errorBox(x));
    }
  };
  return h('form', {class: 'row upload', onsubmit: submit}, 'Upload ', file, desc, h('button', {type: 'submit'}, 'Upload'), progress, msg);
}
