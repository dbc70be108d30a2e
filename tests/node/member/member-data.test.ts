import { describe, expect, it } from 'vitest';
import { buildMemberData } from '../../../src/node/member/member-data.ts';

const base = {
  connUrl: 'postgres://127.0.0.1:5433/postgres',
  apiUrl: 'http://127.0.0.1:8009/ha',
  version: '0.1.0',
  role: 'replica' as const,
  tags: {},
  paused: false,
};

describe('buildMemberData: progress (issue 25, docs/backups.md "Progress")', () => {
  it('carries the long operation under way as one line, and nothing without one', () => {
    const text = 'clone pgbackrest: restoring 45%';
    expect(buildMemberData({ ...base, state: 'creating_replica', progress: text }).progress).toBe(text);
    expect(buildMemberData({ ...base, state: 'running' })).not.toHaveProperty('progress');
  });
});
