// Boot, sign-in, hash routing: #/fleet, #/e/<type>/<id>[/<tab>[/<item>]].
import {boot, ctx, authorize, signOut, onAuthChange, setSignInPrompt, signedIn} from './api.js';
import {clear, errorBox, h} from './dom.js';
import {loadTree, selectInTree} from './tree.js';
import {renderFleet} from './fleet.js';
import {renderEntity} from './entity.js';
import {renderUpdates} from './updates.js';

const main = document.getElementById('main');
let cleanup = null;

function signInDialog() {
  const dlg = document.getElementById('signin');
  const form = document.getElementById('signin-form');
  const err = document.getElementById('signin-error');
  return new Promise((resolve, reject) => {
    err.hidden = true;
    const submit = async (e) => {
      e.preventDefault();
      const btn = document.getElementById('signin-submit');
      btn.disabled = true;
      try {
        await authorize(document.getElementById('client-id').value, document.getElementById('client-secret').value);
        done();
        dlg.close();
        resolve();
      } catch (x) {
        err.textContent = 'Sign-in failed: ' + x.message;
        err.hidden = false;
      } finally {
        btn.disabled = false;
      }
    };
    const cancel = () => { done(); dlg.close(); reject(new Error('sign-in required: this gateway needs a token for this request')); };
    const done = () => {
      form.removeEventListener('submit', submit);
      document.getElementById('signin-cancel').removeEventListener('click', cancel);
    };
    form.addEventListener('submit', submit);
    document.getElementById('signin-cancel').addEventListener('click', cancel);
    if (!dlg.open) dlg.showModal();
    document.getElementById('client-id').focus();
  });
}

let authInfo = null;

function showAuth(info) {
  if (info !== undefined) authInfo = info;
  info = authInfo;
  const who = document.getElementById('who');
  const inBtn = document.getElementById('signin-btn');
  const outBtn = document.getElementById('signout-btn');
  who.textContent = info && info.signedIn ? `signed in${info.who ? ' as ' + info.who : ''}${info.scope ? ' (' + info.scope + ')' : ''}` : '';
  const authOn = Boolean(ctx.auth && ctx.auth.enabled);
  inBtn.hidden = !authOn || signedIn();
  outBtn.hidden = !signedIn();
}

function route() {
  if (cleanup) { cleanup(); cleanup = null; }
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  document.getElementById('nav-fleet').classList.toggle('sel', parts[0] !== 'e' && parts[0] !== 'updates');
  document.getElementById('nav-updates').classList.toggle('sel', parts[0] === 'updates');
  if (parts[0] === 'updates') {
    selectInTree(null, null);
    cleanup = renderUpdates(main);
  } else if (parts[0] === 'e' && parts[1] && parts[2]) {
    selectInTree(parts[1], parts[2]);
    cleanup = renderEntity(main, parts[1], parts[2], parts[3] || '', parts.slice(4).join('/'));
  } else {
    selectInTree(null, null);
    cleanup = renderFleet(main);
  }
}

// The theme: the person's choice on this page (in memory: the page stores nothing), else
// the system's preference.
function applyTheme(choice) {
  const dark = choice ? choice === 'dark' : matchMedia('(prefers-color-scheme: dark)').matches;
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
  document.getElementById('theme-btn').textContent = dark ? 'Light' : 'Dark';
}

function setupTheme() {
  let choice = null;
  applyTheme(choice);
  matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => applyTheme(choice));
  document.getElementById('theme-btn').addEventListener('click', () => {
    choice = document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark';
    applyTheme(choice);
  });
}

async function start() {
  setupTheme();
  setSignInPrompt(signInDialog);
  onAuthChange(showAuth);
  document.getElementById('signin-btn').addEventListener('click', () => signInDialog().catch(() => {}));
  document.getElementById('signout-btn').addEventListener('click', async () => { await signOut(); showAuth(null); location.reload(); });
  try {
    const root = await boot();
    document.getElementById('gw-name').textContent = `${root.name} ${root.version}`;
  } catch (e) {
    const needsToken = e.status === 401 || /sign-in required/.test(e.message);
    clear(main, h('h2', {}, needsToken ? 'Sign-in required' : 'Gateway not reachable'), errorBox(e),
      h('button', {type: 'button', onclick: () => location.reload()}, needsToken ? 'Sign in' : 'Retry'));
    return;
  }
  showAuth();
  // Updates appear in the header where an update provider serves them (the root's capability).
  document.getElementById('nav-updates').hidden = !((ctx.root && ctx.root.capabilities) || {}).updates;
  loadTree(document.getElementById('tree'), document.getElementById('tree-filter'));
  window.addEventListener('hashchange', route);
  route();
}

start();
