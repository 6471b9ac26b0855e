/** The interactions a process has not yet answered (src/rush/answering.ts), which the start gate lets go first. */
import { describe, expect, it } from 'vitest';
import { ANSWER_WITHIN_MS, createAnswering } from '../../src/rush/answering.ts';

describe('createAnswering', () => {
  it('counts an interaction from its handler’s call until it settles, answered or failed', async () => {
    const answering = createAnswering();
    const finish: (() => void)[] = [];
    const handler = answering.around(
      (fail: boolean) =>
        new Promise<void>((resolve, reject) => {
          finish.push(() => (fail ? reject(new Error('refused')) : resolve()));
        }),
    );
    const answered = handler(false);
    const failed = handler(true);
    expect(answering.pending).toBe(2);
    finish[0]?.();
    await answered;
    expect(answering.pending).toBe(1);
    finish[1]?.();
    await expect(failed).rejects.toThrow('refused');
    expect(answering.pending).toBe(0);
  });

  it('stops counting an interaction once Discord’s three seconds are over, answered or not', () => {
    let clock = 0;
    const answering = createAnswering(() => clock);
    const never = answering.around(() => new Promise<void>(() => {}));
    void never();
    clock = 1_000;
    void never();
    expect(answering.pending).toBe(2);
    clock = ANSWER_WITHIN_MS;
    expect(answering.pending).toBe(1);
    clock = 1_000 + ANSWER_WITHIN_MS;
    expect(answering.pending).toBe(0);
  });
});
