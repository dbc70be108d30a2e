/**
 * The /ui page in a real browser (Debian's chromium through playwright-core) on a real 3-node
 * cluster: it loads, draws the three machines, and follows a switchover live (no reload). Prints
 * the page load time and the delivery latency of transitions; saves screenshots to out/. The
 * charts are readable at 1400 px (no two labels overlap, none smaller than 11 px), the current
 * state and the recent path are marked, and the page's HTML carries them, so a browser without
 * JavaScript shows them.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/processes.ts';
import { TestCluster } from './support/cluster.ts';

const CHROMIUM = '/usr/bin/chromium';
let c: TestCluster;
let browser: Browser | undefined;

beforeAll(async () => {
  c = await TestCluster.create({ nodes: 3, ttl: 10, loopWait: 2, retryTimeout: 3 });
  c.startAll();
  const leader = await c.waitForLeader(60_000);
  await c.waitForStreaming(
    c.nodes.map((n) => n.name).filter((n) => n !== leader),
    60_000,
  );
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
});

afterAll(async () => {
  await browser?.close();
  await c?.destroy();
});

/** The smallest readable text size, in CSS pixels. */
const MIN_TEXT_PX = 11;

/**
 * Measures the database chart's labels as the browser draws them. A label is the text of one
 * SVG group (a state, a group's box, an edge): its lines are united into one box. Returns the
 * pairs of labels whose boxes intersect and the smallest rendered font size (px, the SVG's scale
 * applied). Browser code as a string: the test's type check knows no DOM.
 */
const MEASURE_LABELS = `(() => {
  const texts = [...document.querySelectorAll('section.chart[data-machine="database"] svg text')];
  const labels = new Map();
  let minPx = Infinity;
  for (const t of texts) {
    const b = t.getBoundingClientRect();
    minPx = Math.min(minPx, parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
    const key = t.closest('g[id]')?.id ?? '';
    const l = labels.get(key);
    if (!l) labels.set(key, { text: t.textContent, left: b.left, top: b.top, right: b.right, bottom: b.bottom });
    else Object.assign(l, { text: l.text + ' / ' + t.textContent, left: Math.min(l.left, b.left), top: Math.min(l.top, b.top), right: Math.max(l.right, b.right), bottom: Math.max(l.bottom, b.bottom) });
  }
  const boxes = [...labels.values()];
  const overlaps = [];
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    const a = boxes[i], b = boxes[j];
    if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) overlaps.push(a.text + ' <> ' + b.text);
  }
  return { labels: boxes.length, texts: texts.length, minPx, overlaps, width: document.querySelector('section.chart[data-machine="database"] svg').getBoundingClientRect().width };
})()`;

describe('the /ui page', () => {
  it.skipIf(!existsSync(CHROMIUM))(
    'draws readable charts at 1400 px: labels apart and large enough, the current state and the path marked, in the first paint',
    async () => {
      const leader = (await c.leader())!;
      const url = `http://127.0.0.1:${c.node(leader).apiPort}/ui`;
      mkdirSync('out', { recursive: true });

      // The page's HTML itself holds the charts as SVG, the current state marked.
      const html = await (await fetch(url, { signal: AbortSignal.timeout(30_000) })).text();
      for (const m of ['database', 'switchover', 'restart']) {
        expect(html, m).toMatch(
          new RegExp(`<section class="chart" id="chart-${m}"[^>]*>\\s*<h2>[^\\n]*\\n\\s*<div class="svg"[^>]*><svg `),
        );
      }
      expect(html).toMatch(/<section class="chart" id="chart-database" data-machine="database" data-state="running">/);
      expect(html).toMatch(/<g id="state:database\.running" class="node active">/);

      for (const javaScriptEnabled of [false, true]) {
        const context = await browser!.newContext({ viewport: { width: 1400, height: 1000 }, javaScriptEnabled });
        const page = await context.newPage();
        await page.goto(url);
        if (javaScriptEnabled) await page.waitForSelector('body[data-ready="1"]', { timeout: 15_000 });
        // Without scripts: what the server sent is what is drawn.
        for (const m of ['database', 'switchover', 'restart'])
          expect(await page.locator(`section.chart[data-machine="${m}"] svg`).count(), m).toBe(1);
        expect(await page.locator('section.chart[data-machine="database"] g.node.active').count()).toBe(1);
        expect(await page.locator('section.chart[data-machine="database"] g.node.active').getAttribute('id')).toBe(
          'state:database.running',
        );
        const fill = await page.evaluate(
          `getComputedStyle(document.querySelector('section.chart[data-machine="database"] g.node.active path')).fill`,
        );
        expect(fill).toBe('rgb(255, 153, 102)'); // --hl, #ff9966
        // The agent's own start (stopped → starting → running, or a clone first) is the path.
        expect(await page.locator('section.chart[data-machine="database"] g.edge.path').count()).toBeGreaterThan(0);
        expect(await page.locator('section.chart[data-machine="database"] g.edge.path-last').count()).toBe(1);

        const m = (await page.evaluate(MEASURE_LABELS)) as {
          labels: number;
          texts: number;
          minPx: number;
          overlaps: string[];
          width: number;
        };
        console.log(
          `database chart at 1400 px (javascript ${javaScriptEnabled ? 'on' : 'off'}): ${m.texts} texts in ${m.labels} labels, ${Math.round(m.width)} px wide, smallest text ${m.minPx.toFixed(1)} px`,
        );
        expect(m.labels).toBeGreaterThan(40);
        expect(m.overlaps).toEqual([]);
        expect(m.minPx).toBeGreaterThanOrEqual(MIN_TEXT_PX);
        await page.screenshot({ path: `out/ui-first-paint-${javaScriptEnabled ? 'js' : 'nojs'}.png`, fullPage: true });
        await page
          .locator('section.chart[data-machine="database"]')
          .screenshot({ path: `out/ui-database-chart-${javaScriptEnabled ? 'js' : 'nojs'}.png` });
        if (!javaScriptEnabled) expect(await page.textContent('#connection')).toMatch(/^as of \d\d:\d\d:\d\d UTC$/);
        await context.close();
      }
    },
  );

  it.skipIf(!existsSync(CHROMIUM))('shows the machines and follows a switchover live', async () => {
    const leader = (await c.leader())!;
    const candidate = c.nodes.map((n) => n.name).find((n) => n !== leader)!;
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    const t0 = Date.now();
    await page.goto(`http://127.0.0.1:${c.node(leader).apiPort}/ui`);
    await page.waitForSelector('body[data-ready="1"]', { timeout: 15_000 });
    const loadMs = Date.now() - t0;
    for (const m of ['database', 'switchover', 'restart']) {
      await page.waitForSelector(`section.chart[data-machine="${m}"] svg`, { timeout: 15_000 });
    }
    expect(await page.getAttribute('section.chart[data-machine="database"]', 'data-state')).toBe('running');
    expect(await page.getAttribute('section.chart[data-machine="switchover"]', 'data-state')).toBe('idle');

    // Record every state the page shows, without reloading it.
    // (Browser code as a string: the test's type check knows no DOM.)
    await page.evaluate(`(() => {
      const seen = {};
      window.__seen = seen;
      for (const s of document.querySelectorAll('section.chart[data-machine]')) {
        const name = s.dataset.machine;
        seen[name] = [s.dataset.state || ''];
        new MutationObserver(() => seen[name].push(s.dataset.state || '')).observe(s, { attributes: true, attributeFilter: ['data-state'] });
      }
    })()`);
    const r = await fetch(`http://127.0.0.1:${c.node(leader).apiPort}/switchover`, {
      method: 'POST',
      body: JSON.stringify({ leader, candidate }),
      signal: AbortSignal.timeout(60_000),
    });
    expect(r.status).toBe(200);
    const seen = await waitFor(
      async () => {
        const s = (await page.evaluate('window.__seen')) as Record<string, string[]>;
        return s['database']!.includes('stopping') && s['switchover']!.includes('executing') ? s : undefined;
      },
      30_000,
      'the page to show the switchover',
    );
    expect(seen['database']).toContain('stopping');
    // The old leader comes back as a replica: the page follows it back to running.
    await waitFor(
      async () => (await page.getAttribute('section.chart[data-machine="database"]', 'data-state')) === 'running',
      30_000,
      'running again',
    );
    // Live, the newest transition's edge is the path's last, and the current state is the only one marked active.
    expect(await page.locator('section.chart[data-machine="database"] g.node.active').getAttribute('id')).toBe('state:database.running');
    expect(await page.locator('section.chart[data-machine="database"] g.node.visited').count()).toBeGreaterThan(0);
    const lastEdge = (await page.locator('section.chart[data-machine="database"] g.edge.path-last').getAttribute('id')) ?? '';
    expect(lastEdge).toMatch(/->database\.running:\d+$/);
    const latencies = (await page.evaluate('window.__transitionLatencies')) as number[];
    expect(latencies.length).toBeGreaterThan(0);
    const sorted = [...latencies].sort((a, b) => a - b);
    const p50 = sorted[Math.floor(sorted.length / 2)]!;
    const max = sorted[sorted.length - 1]!;
    console.log(`/ui load ${loadMs} ms; transition delivery latency p50 ${p50} ms, max ${max} ms over ${latencies.length} entries`);
    const rows = await page.locator('#transitions li').count();
    expect(rows).toBeGreaterThan(0);
    mkdirSync('out', { recursive: true });
    await page.screenshot({ path: 'out/ui-switchover.png', fullPage: true });
    await page.close();
  });
});
