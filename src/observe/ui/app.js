// The /ui page: state charts of the node's machines, highlighted live from the journal stream,
// the latest transitions, and the cluster document. Served by the node; loads nothing else.
'use strict';
(() => {
  const MAX_TRANSITIONS = 50;
  const CLUSTER_REFRESH_MS = 2000;
  /** How many of a machine's last transitions its chart marks as its path (PATH_STEPS of src/observe/chart-marks.ts). */
  const PATH_STEPS = 5;

  /**
   * By machine name: its chart model (GET /machines' `definition`), state, active chart ids and
   * its last journaled transitions (oldest first).
   * @type {Map<string, { id: string, def: any, state: string, active: Set<string>, steps: {event: string, from: string, to: string}[] }>}
   */
  const machines = new Map();
  /** Journaled transitions read before GET /machines answered, by machine name (oldest first). */
  const pendingSteps = new Map();
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

  /** Chart ids active in a flattened state name (`a.b` or `p.a.x,b.y`), ancestors and the root included. */
  function activeIds(machineId, stateName) {
    const out = new Set([machineId]);
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

  /**
   * The index of the chart transition a journaled step took, or -1: the same rule as
   * stepTransition in packages/machines/src/charts/path.ts (event type, declared by a state active
   * before, the deepest first, every target active after; eventless transitions fit any event).
   */
  function stepTransition(def, step) {
    const before = activeIds(def.id, step.from);
    const after = activeIds(def.id, step.to);
    const depth = (id) => id.split('.').length;
    for (const eventless of [false, true]) {
      let best = -1;
      def.transitions.forEach((t, i) => {
        if (eventless ? t.eventType !== '' : t.eventType !== step.event) return;
        if (!before.has(t.source) || t.targets.length === 0 || !t.targets.every((id) => after.has(id))) return;
        if (best === -1 || depth(t.source) > depth(def.transitions[best].source)) best = i;
      });
      if (best !== -1) return best;
    }
    return -1;
  }

  /** The transitions of the machine's last PATH_STEPS steps, oldest first. */
  function pathOf(m) {
    if (!m.def) return [];
    return m.steps
      .slice(-PATH_STEPS)
      .map((s) => stepTransition(m.def, s))
      .filter((i) => i >= 0);
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

  /**
   * Shows the machine's state on its chart: data-state, the badge, and the classes the server's
   * first paint set too (markChartSvg of src/observe/chart-marks.ts): `active` on the current
   * states, `visited` on the states of the recent path, `path` on its edges, `path-last` on the newest.
   */
  function paint(name) {
    const m = machines.get(name);
    if (!m) return;
    const c = container(name);
    c.dataset.state = m.state;
    c.querySelector('.state').textContent = m.state;
    const path = pathOf(m);
    const onPath = new Set(path);
    const last = path[path.length - 1];
    const visited = new Set();
    for (const i of path) {
      const t = m.def.transitions[i];
      visited.add(t.source);
      for (const target of t.targets) visited.add(target);
    }
    for (const g of c.querySelectorAll('g[id^="state:"]')) {
      const id = g.getAttribute('id').slice('state:'.length);
      // The root cluster is always active; colouring the whole chart says nothing.
      const active = id !== m.id && m.active.has(id);
      g.classList.toggle('active', active);
      g.classList.toggle('visited', !active && id !== m.id && visited.has(id));
    }
    for (const g of c.querySelectorAll('g[id^="edge:"]')) {
      const carried = [...g.classList].filter((k) => /^t\d+$/.test(k)).map((k) => Number(k.slice(1)));
      g.classList.toggle(
        'path',
        carried.some((i) => onPath.has(i)),
      );
      g.classList.toggle('path-last', last !== undefined && carried.includes(last));
    }
  }

  /** Fetches a machine's chart when the page has none (a machine the server did not draw). */
  async function loadChart(name) {
    const res = await fetch('/machines/' + encodeURIComponent(name) + '/chart.svg');
    if (!res.ok) throw new Error('chart ' + name + ': HTTP ' + res.status);
    const text = await res.text();
    const start = text.indexOf('<svg');
    container(name).querySelector('.svg').innerHTML = start >= 0 ? text.slice(start) : text;
    paint(name);
  }

  function timeOf(iso) {
    const d = new Date(iso);
    return Number.isNaN(d.getTime())
      ? String(iso)
      : d.toLocaleTimeString([], { hour12: false }) + '.' + String(d.getMilliseconds()).padStart(3, '0');
  }

  function transitionItem(e, fresh) {
    const li = el('li', fresh ? 'fresh' : '');
    li.dataset.seq = String(e.seq);
    li.append(
      el('span', 't-time', timeOf(e.time)),
      el('span', 't-machine', e.machine),
      document.createTextNode(': ' + e.from + ' → ' + e.to + ' '),
      el('span', 't-event', '(' + e.event + ')'),
    );
    if (e.reason) li.append(el('span', 't-reason', e.reason));
    return li;
  }

  function addTransition(e, fresh) {
    const list = $('transition-list');
    list.prepend(transitionItem(e, fresh));
    while (list.children.length > MAX_TRANSITIONS) list.lastElementChild.remove();
  }

  /** Remembers a journaled transition as a step of its machine's path. */
  function addStep(e) {
    const step = { event: e.event, from: e.from, to: e.to };
    const m = machines.get(e.machine);
    const steps = m ? m.steps : pendingSteps.get(e.machine) || [];
    steps.push(step);
    if (steps.length > PATH_STEPS * 4) steps.splice(0, steps.length - PATH_STEPS);
    if (!m) pendingSteps.set(e.machine, steps);
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
    addStep(e);
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
    const missing = [];
    for (const m of doc.machines) {
      const known = machines.get(m.name);
      const steps = known ? known.steps : pendingSteps.get(m.name) || [];
      pendingSteps.delete(m.name);
      machines.set(m.name, { id: m.definition.id, def: m.definition, state: m.state ?? '', active: new Set(m.activeStates), steps });
      paint(m.name);
      // The server drew the charts it knew of into the page; fetch only the ones it did not.
      if (!container(m.name).querySelector('.svg svg')) missing.push(m.name);
    }
    // Charts load in the background; paint() runs again when each arrives.
    for (const n of missing) loadChart(n).catch((err) => console.error(err));
    return missing;
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
      const transitions = events.filter((e) => e.kind === 'transition');
      // The server's list (in UTC) is redrawn in local time.
      $('transition-list').replaceChildren();
      for (const e of transitions.slice(0, MAX_TRANSITIONS).reverse()) addTransition(e, false);
      for (const e of transitions.slice().reverse()) addStep(e);
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
