import { describe, expect, it } from 'vitest';
import { freePorts } from './ports.ts';

describe('test support', () => {
  it('picks distinct free ports on loopback', async () => {
    const ports = await freePorts(3);
    expect(new Set(ports).size).toBe(3);
    for (const p of ports) expect(p).toBeGreaterThan(0);
  });
});
