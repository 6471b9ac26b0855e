/** The interactions a process has not yet answered (src/rush/answering.ts), which the start gate lets go first. */
import { describe, expect, it } from 'vitest';
import { createAnswering } from '../../src/rush/index.ts';

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
});
