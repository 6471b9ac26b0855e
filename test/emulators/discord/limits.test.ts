import { afterEach, describe, expect, it } from 'vitest';
import { type DiscordEmulator, startDiscordEmulator } from '../../../emulators/discord/index.ts';
import { callbackRefusal, LIMITS, messageRefusal } from '../../../emulators/discord/limits.ts';

const choices = (count: number, name = 'voice') =>
  Array.from({ length: count }, (_, i) => ({ name: `${name} ${i}`, value: String(i) }));

describe('Discord size limits (50035 Invalid Form Body)', () => {
  it('lets a message at the limits through', () => {
    const embed = {
      title: 't'.repeat(256),
      description: 'd'.repeat(4096),
      fields: [{ name: 'n', value: 'v' }],
    };
    expect(messageRefusal({ content: 'x'.repeat(LIMITS.content), embeds: [embed] })).toBeUndefined();
    expect(messageRefusal({ content: '🎤'.repeat(LIMITS.content) })).toBeUndefined();
    expect(callbackRefusal({ type: 8, data: { choices: choices(25, 'n'.repeat(90)) } })).toBeUndefined();
    expect(callbackRefusal({ type: 4, data: { content: 'ok' } })).toBeUndefined();
  });

  it.each([
    {
      case: 'content over 2,000',
      refusal: messageRefusal({ content: 'x'.repeat(2001) }),
      errors: {
        content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 2000 or fewer in length.' }] },
      },
    },
    {
      case: 'a reply callback with long content',
      refusal: callbackRefusal({ type: 4, data: { content: 'x'.repeat(2001) } }),
      errors: { data: { content: { _errors: [expect.objectContaining({ code: 'BASE_TYPE_MAX_LENGTH' })] } } },
    },
    {
      case: '26 autocomplete choices',
      refusal: callbackRefusal({ type: 8, data: { choices: choices(26) } }),
      errors: { data: { choices: { _errors: [expect.objectContaining({ code: 'BASE_TYPE_BAD_LENGTH' })] } } },
    },
    {
      case: 'a choice name over 100',
      refusal: callbackRefusal({ type: 8, data: { choices: [{ name: 'n'.repeat(101), value: 'v' }] } }),
      errors: {
        data: {
          choices: { 0: { name: { _errors: [expect.objectContaining({ code: 'BASE_TYPE_BAD_LENGTH' })] } } },
        },
      },
    },
    {
      case: 'embeds over 6,000 together',
      refusal: messageRefusal({
        embeds: [{ description: 'd'.repeat(4000) }, { description: 'd'.repeat(2001) }],
      }),
      errors: { embeds: { _errors: [expect.objectContaining({ code: 'MAX_EMBED_SIZE_EXCEEDED' })] } },
    },
    {
      case: 'a field value over 1,024',
      refusal: messageRefusal({ embeds: [{ fields: [{ name: 'n', value: 'v'.repeat(1025) }] }] }),
      errors: { embeds: { 0: { fields: { 0: { value: expect.anything() } } } } },
    },
    {
      case: 'six buttons in a row',
      refusal: messageRefusal({ components: [{ type: 1, components: Array(6).fill({ type: 2 }) }] }),
      errors: { components: { 0: { components: expect.anything() } } },
    },
  ])('refuses $case', ({ refusal, errors }) => {
    expect(refusal).toEqual({ status: 400, body: { message: 'Invalid Form Body', code: 50035, errors } });
  });
});

describe('the emulator refuses over-long bodies on every message route', () => {
  let emulator: DiscordEmulator | undefined;
  afterEach(async () => {
    await emulator?.close();
  });

  it('answers 50035 to a channel post, a callback, a follow-up and a webhook edit, and stores nothing', async () => {
    emulator = await startDiscordEmulator();
    const guild = emulator.createGuild({ name: 'g' });
    const text = guild.addTextChannel('t');
    const headers = { authorization: `Bot ${emulator.token}`, 'content-type': 'application/json' };
    const long = JSON.stringify({ content: 'x'.repeat(2001) });
    const app = emulator.applicationId;
    const calls = [
      [`/channels/${text.id}/messages`, 'POST', long],
      ['/interactions/1/tok/callback', 'POST', JSON.stringify({ type: 8, data: { choices: choices(26) } })],
      [`/webhooks/${app}/tok`, 'POST', long],
      [`/webhooks/${app}/tok/messages/@original`, 'PATCH', long],
    ] as const;
    for (const [path, method, body] of calls) {
      const response = await fetch(`${emulator.restUrl}/v10${path}`, { method, headers, body });
      expect(response.status, path).toBe(400);
      expect(await response.json(), path).toMatchObject({ code: 50035, errors: expect.any(Object) });
    }
    expect(emulator.channelMessages(text)).toEqual([]);
    const fits = await fetch(`${emulator.restUrl}/v10/channels/${text.id}/messages`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ content: 'x'.repeat(2000) }),
    });
    expect(fits.status).toBe(200);
  });
});
