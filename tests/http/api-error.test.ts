import { describe, expect, it } from 'vitest';
import { ApiError, ERROR_STATUS, errorAnswer, orFail, parseFailure, refuse } from '../../src/http/api-error.ts';

describe('ApiError: one code-to-status table', () => {
  it('answers with the status of its code, its text and headers', async () => {
    const r = errorAnswer(new ApiError('overloaded', 'too many', { 'Retry-After': '1' }));
    expect(r.status).toBe(503);
    expect(r.headers.get('Retry-After')).toBe('1');
    expect(r.headers.get('Content-Type')).toBe('text/plain; charset=utf-8');
    expect(await r.text()).toBe('too many');
    expect(refuse('conflict', 'x').status).toBe(409);
  });

  it('maps every code to a 4xx or 5xx status', () => {
    for (const status of Object.values(ERROR_STATUS)) expect(status >= 400 && status < 600).toBe(true);
  });

  it('orFail turns a rejection into an ApiError with the code and the text of the reason', async () => {
    await expect(
      orFail(
        () => Promise.resolve(7),
        'dcs_unavailable',
        () => 'no',
      ),
    ).resolves.toBe(7);
    const e = await orFail(
      () => Promise.reject(new Error('gone')),
      'dcs_unavailable',
      (r) => `DCS is not reachable: ${(r as Error).message}`,
    ).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).code).toBe('dcs_unavailable');
    expect((e as ApiError).message).toBe('DCS is not reachable: gone');
  });

  it('a parse failure of the domain keeps its status (400 or 422)', () => {
    expect(ERROR_STATUS[parseFailure(400)]).toBe(400);
    expect(ERROR_STATUS[parseFailure(422)]).toBe(422);
  });
});
