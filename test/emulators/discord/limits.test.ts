import { afterEach, describe, expect, it } from 'vitest';
import { type DiscordEmulator, startDiscordEmulator } from '../../../emulators/discord/index.ts';
import { choicesRefusal, messageLimitRefusal } from '../../../emulators/discord/limits.ts';

describe('the Discord emulator’s limits', () => {
  it('refuses content over 2,000 characters (code points) with 50035 naming the field', () => {
    expect(messageLimitRefusal({ content: 'é'.repeat(2_000) })).toBeUndefined();
    expect(messageLimitRefusal({ content: 'x'.repeat(2_001) })).toEqual({
      status: 400,
      body: {
        message: 'Invalid Form Body',
        code: 50035,
        errors: {
          content: {
            _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }],
          },
        },
      },
    });
  });

  it('refuses embeds, rows and buttons over their limits', () => {
    expect(messageLimitRefusal({ embeds: [{ description: 'd'.repeat(4_097) }] })?.body).toMatchObject({
      code: 50035,
      errors: { embeds: { 0: { description: {} } } },
    });
    expect(
      messageLimitRefusal({
        embeds: [{ description: 'd'.repeat(4_000) }, { description: 'd'.repeat(2_001) }],
      }),
    ).toMatchObject({ status: 400 });
    const row = (n: number) => ({
      type: 1,
      components: Array.from({ length: n }, () => ({ type: 2, label: 'x' })),
    });
    expect(messageLimitRefusal({ components: [row(5)] })).toBeUndefined();
    expect(messageLimitRefusal({ components: [row(6)] })).toMatchObject({ status: 400 });
    expect(messageLimitRefusal({ components: Array.from({ length: 6 }, () => row(1)) })).toMatchObject({
      status: 400,
    });
  });

  it('refuses more than 25 autocomplete choices, and a name or value over 100 characters', () => {
    const choices = (n: number, name = 'n') => ({
      choices: Array.from({ length: n }, (_, i) => ({ name, value: `${i}` })),
    });
    expect(choicesRefusal(choices(25))).toBeUndefined();
    expect(choicesRefusal(choices(26))).toMatchObject({ status: 400, body: { code: 50035 } });
    expect(choicesRefusal(choices(1, 'n'.repeat(101)))).toMatchObject({ status: 400 });
    expect(choicesRefusal({ choices: [{ name: 'n', value: 'v'.repeat(101) }] })).toMatchObject({
      status: 400,
    });
  });
});

describe('the emulator’s REST routes', () => {
  let emulator: DiscordEmulator | undefined;
  afterEach(async () => {
    await emulator?.close();
  });

  it('refuses a channel message edit over 2,000 characters (50035) and leaves the message as it was', async () => {
    emulator = await startDiscordEmulator();
    const text = emulator.createGuild({ name: 'g' }).addTextChannel('t');
    const headers = { authorization: `Bot ${emulator.token}`, 'content-type': 'application/json' };
    const url = `${emulator.restUrl}/v10/channels/${text.id}/messages`;
    const posted = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ content: 'first' }) });
    const { id } = (await posted.json()) as { id: string };
    const edit = (content: string) =>
      fetch(`${url}/${id}`, { method: 'PATCH', headers, body: JSON.stringify({ content }) });
    const refused = await edit('x'.repeat(2_001));
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ code: 50035, errors: { content: {} } });
    expect(emulator.channelMessages(text).map((m) => m.content)).toEqual(['first']);
    expect((await edit('x'.repeat(2_000))).status).toBe(200);
  });
});
