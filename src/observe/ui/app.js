// The /ui page: state charts of the node's machines, highlighted live from the journal stream,
// the latest transitions, and the cluster document. Served by the node; loads nothing else.
'use strict';
(() => {
  const MAX_TRANSITIONS = 50;
  const CLUSTER_REFRESH_MS = 2000;

  /** @type {Map<string, { id: string, state: string, active: Set<string> }>} by machine name */
  const machines = new Map();
  let lastSeq = 0;

  // Hooks for browser tests.
  window.__lastTransitionAt = 0;
  window.__transitionLatencies = [];

  const $ = (id) => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = String(text);
    return e;
  };

  /** Chart ids active in a flattened state name (`a.b` or `p.a.x,b.y`), ancestors included. */
  function activeIds(machineId, stateName) {
    const out = new Set();
    if (!stateName) return out;
    for (const path of String(stateName).split(',')) {
      let acc = machineId;
      for (const part of path.split('.')) {
        acc = acc + '.' + part;
        out.add(acc);
      }
    }
    return out;
  }

  /** The chart container of a machine, created when the page does not have one yet. */
  function container(name) {
    let c = $('chart-' + name);
    if (!c) {
      c = el('section', 'chart');
      c.id = 'chart-' + name;
      c.dataset.machine = name;
      c.dataset.state = '';
      const h = el('h2', '', name + ' ');
      h.append(el('span', 'state'));
      c.append(h, el('div', 'svg'));
      $('charts').append(c);
    }
    return c;
  }

  /** Shows `active` on the machine's chart: data-state, badge, and the `active` class on states. */
  function paint(name) {
    const m = machines.get(name);
    if (!m) return;
    const c = container(name);
    c.dataset.state = m.state;
    c.querySelector('.state').textContent = m.state;
    for (const g of c.querySelectorAll('g[id^="state:"]')) {
      const id = g.getAttribute('id').slice('state:'.length);
      // The root cluster is always active; colouring the whole chart says nothing.
      g.classList.toggle('active', id !== m.id && m.active.has(id));
    }
  }

  async function loadChart(name) {
    const res = await fetch('/machines/' + encodeURIComponent(name) + '/chart.svg?rankdir=auto');
    if (!res.ok) throw new Error('chart ' + name + ': HTTP ' + res.status);
    const text = await res.text();
    const start = text.indexOf('<svg');
    container(name).querySelector('.svg').innerHTML = start >= 0 ? text.slice(start) : text;
    paint(name);
  }

  function timeOf(iso) {
    const d = new Date(iso);
    return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
  }

  function transitionItem(e, fresh) {
    const li = el('li', fresh ? 'fresh' : '');
    li.dataset.seq = String(e.seq);
    li.append(el('span', 't-time', timeOf(e.time)), el('span', 't-machine', e.machine), document.createTextNode(': ' + e.from + ' → ' + e.to + ' '), el('span', 't-event', '(' + e.event + ')'));
    if (e.reason) li.append(el('span', 't-reason', e.reason));
    return li;
  }

  function addTransition(e, fresh) {
    const list = $('transition-list');
    list.prepend(transitionItem(e, fresh));
    while (list.children.length > MAX_TRANSITIONS) list.lastElementChild.remove();
  }

  /** One journal entry from the stream. */
  function onEntry(e) {
    if (typeof e.seq === 'number' && e.seq > lastSeq) lastSeq = e.seq;
    if (e.kind === 'start') {
      void refreshMachines().catch((err) => console.error(err));
      return;
    }
    if (e.kind !== 'transition') return;
    const arrived = Date.now();
    const sent = Date.parse(e.time);
    if (!Number.isNaN(sent)) window.__transitionLatencies.push(arrived - sent);
    window.__lastTransitionAt = arrived;
    const m = machines.get(e.machine);
    if (m) {
      m.state = e.to;
      m.active = activeIds(m.id, e.to);
      paint(e.machine);
    } else {
      void refreshMachines().catch((err) => console.error(err));
    }
    addTransition(e, true);
  }

  async function refreshMachines() {
    const res = await fetch('/machines');
    if (!res.ok) throw new Error('machines: HTTP ' + res.status);
    const doc = await res.json();
    const fresh = [];
    for (const m of doc.machines) {
      if (!machines.has(m.name)) fresh.push(m.name);
      machines.set(m.name, { id: m.definition.id, state: m.state ?? '', active: new Set(m.activeStates) });
      paint(m.name);
    }
    // Charts load in the background; paint() runs again when each arrives.
    for (const n of fresh) loadChart(n).catch((err) => console.error(err));
    return fresh;
  }

  function connect() {
    const status = $('connection');
    const source = new EventSource('/events/stream?since=' + lastSeq);
    source.addEventListener('open', () => {
      status.dataset.status = 'live';
      status.textContent = 'live';
    });
    source.addEventListener('error', () => {
      status.dataset.status = 'reconnecting';
      status.textContent = 'reconnecting…';
    });
    source.addEventListener('journal', (ev) => {
      try {
        onEntry(JSON.parse(ev.data));
      } catch (err) {
        console.error(err);
      }
    });
  }

  // ---- cluster ---------------------------------------------------------------------------

  function lagText(m) {
    const lag = m.lag ?? m.replay_lag ?? m.receive_lag;
    if (lag === undefined) return m.role === 'leader' ? '' : '–';
    if (typeof lag !== 'number') return String(lag);
    if (lag < 1024) return lag + ' B';
    if (lag < 1024 * 1024) return (lag / 1024).toFixed(1) + ' KiB';
    return (lag / 1024 / 1024).toFixed(1) + ' MiB';
  }

  function renderCluster(doc) {
    const body = $('cluster-members');
    body.replaceChildren();
    const members = doc && Array.isArray(doc.members) ? doc.members : [];
    $('cluster-scope').textContent = doc && doc.scope ? doc.scope : '';
    const notes = [];
    if (doc && doc.pause) notes.push('paused');
    if (doc && doc.scheduled_switchover) {
      const s = doc.scheduled_switchover;
      notes.push('switchover scheduled at ' + s.at + (s.from ? ' from ' + s.from : '') + (s.to ? ' to ' + s.to : ''));
    }
    $('cluster-notes').textContent = notes.join(' · ');
    if (members.length === 0) {
      const tr = el('tr');
      const td = el('td', 'muted', 'no members');
      td.colSpan = 6;
      tr.append(td);
      body.append(tr);
      return;
    }
    for (const m of members) {
      const tr = el('tr');
      tr.dataset.member = m.name;
      tr.append(
        el('td', '', m.name),
        el('td', 'role-' + m.role, m.role),
        el('td', '', m.state),
        el('td', '', lagText(m)),
        el('td', '', m.timeline ?? ''),
        el('td', 'muted', m.host !== undefined ? m.host + ':' + m.port : ''),
      );
      body.append(tr);
    }
  }

  async function refreshCluster() {
    try {
      const res = await fetch('/ui/cluster');
      if (res.ok) renderCluster(await res.json());
    } catch (err) {
      console.error(err);
    } finally {
      setTimeout(refreshCluster, CLUSTER_REFRESH_MS);
    }
  }

  // ---- start -----------------------------------------------------------------------------

  async function start() {
    void refreshCluster();
    // Journal first, machines second: a transition between the two reads is replayed by the
    // stream (since = last seq), so the charts end on the newest state.
    try {
      const res = await fetch('/events?limit=1000');
      const { events } = await res.json();
      for (const e of events) if (e.seq > lastSeq) lastSeq = e.seq;
      const transitions = events.filter((e) => e.kind === 'transition').slice(0, MAX_TRANSITIONS);
      for (const e of transitions.reverse()) addTransition(e, false);
    } catch (err) {
      console.error(err);
    }
    await refreshMachines().catch((err) => console.error(err));
    connect();
    document.body.dataset.ready = '1';
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else void start();
})();
