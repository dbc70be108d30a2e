import { describe, expect, it } from 'vitest';
import { targetedRecovery } from '../../../src/node/agent/agent.ts';

describe('targetedRecovery (a custom bootstrap method’s recovery_conf, docs/backups.md)', () => {
  it('is absent without recovery_conf or keep_existing_recovery_conf', () => {
    expect(targetedRecovery({ command: 'x' }, 'fetch %f %p')).toBeUndefined();
  });

  it('writes the target with promote and the replicas’ restore_command unless the method names its own; booleans as on/off', () => {
    expect(
      targetedRecovery(
        { command: 'x', recovery_conf: { recovery_target_time: '2026-11-27 12:00:00+00', recovery_target_inclusive: false } },
        'fetch %f %p',
      ),
    ).toEqual({
      parameters: {
        recovery_target_time: '2026-11-27 12:00:00+00',
        recovery_target_inclusive: 'off',
        recovery_target_action: 'promote',
        restore_command: 'fetch %f %p',
      },
      keepExisting: false,
    });
    expect(
      targetedRecovery({ command: 'x', recovery_conf: { restore_command: 'own %f %p', recovery_target: 'immediate' } }, 'fetch %f %p')
        ?.parameters,
    ).toEqual({
      restore_command: 'own %f %p',
      recovery_target: 'immediate',
      recovery_target_action: 'promote',
    });
  });

  it('keeps the restore tool’s settings with keep_existing_recovery_conf', () => {
    expect(targetedRecovery({ command: 'x', keep_existing_recovery_conf: true }, undefined)).toEqual({
      parameters: {},
      keepExisting: true,
    });
  });
});
