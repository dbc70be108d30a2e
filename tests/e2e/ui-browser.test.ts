/**
 * The /ui page in a real browser (Debian's chromium through playwright-core) on a real 3-node
 * cluster: it loads, draws the three machines, and follows a switchover live (no reload). Prints
 * the page load time and the delivery latency of transitions; saves a screenshot to out/.
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
  await c.waitForStreaming(c.nodes.map((n) => n.name).filter((n) => n !== leader), 60_000);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
});

afterAll(async () => {
  await browser?.close();
  await c?.destroy();
});

describe('the /ui page', () => {
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
    await waitFor(async () => (await page.getAttribute('section.chart[data-machine="database"]', 'data-state')) === 'running', 30_000, 'running again');
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
