import { describe, expect, it } from 'vitest';

describe('toolchain', () => {
  it('runs the tests on Node >= 22.12, as @discordjs/voice 0.19 requires', () => {
    const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
    expect(major > 22 || (major === 22 && minor >= 12)).toBe(true);
  });

  it('loads @discordjs/opus built for this Node', async () => {
    const { OpusEncoder } = await import('@discordjs/opus');
    const encoder = new OpusEncoder(48_000, 2);
    const packet = encoder.encode(Buffer.alloc(960 * 2 * 2));
    expect(encoder.decode(packet).length).toBe(960 * 2 * 2);
  });
});
