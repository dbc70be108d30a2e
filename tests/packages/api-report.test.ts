/**
 * The public API of `@ha/machines` against its checked-in report (API Extractor,
 * packages/machines/api/*.api.md): a change to an export, a type or an event shape fails here
 * until the report is updated with it (`npm run api:update -w @ha/machines`), so it shows in
 * review and gets its version bump (packages/machines/README.md "Versioning"). Also fails on a
 * type the API uses but does not export (ae-forgotten-export) and on a compiler error in the
 * .d.ts. Reads packages/machines/dist, built by the unit project's global setup when stale.
 */
import { Extractor, ExtractorConfig, type ExtractorMessage } from '@microsoft/api-extractor';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MACHINES_PACKAGE } from '../support/machines-build.ts';

describe('the public API of @ha/machines', () => {
  for (const [entry, config] of [
    ['@ha/machines', 'api-extractor.json'],
    ['@ha/machines/svg', 'api-extractor-svg.json'],
    ['@ha/machines/domain', 'api-extractor-domain.json'],
  ] as const) {
    it(`${entry} matches its API report`, { timeout: 120_000 }, () => {
      const messages: string[] = [];
      const result = Extractor.invoke(ExtractorConfig.loadFileAndPrepare(join(MACHINES_PACKAGE, 'api', config)), {
        localBuild: false, // a difference from the report is a failure, not an update
        messageCallback: (m: ExtractorMessage) => {
          if (m.logLevel === 'error' || m.logLevel === 'warning') messages.push(m.formatMessageWithLocation(MACHINES_PACKAGE));
          m.handled = true;
        },
      });
      const hint = 'if the change is meant: npm run api:update -w @ha/machines, then review and commit packages/machines/api/';
      expect(result.apiReportChanged, `${messages.join('\n')}\n${hint}`).toBe(false);
      expect(messages, hint).toEqual([]);
      expect(result.succeeded).toBe(true);
    });
  }
});
