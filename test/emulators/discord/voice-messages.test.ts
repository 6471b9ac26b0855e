import { PermissionFlagsBits as P } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type Channel,
  type DiscordEmulator,
  type Guild,
  IS_VOICE_MESSAGE,
  startDiscordEmulator,
} from '../../../emulators/discord/index.ts';
import { DEFAULT_BOT_PERMISSIONS } from '../../../emulators/discord/model.ts';

// The emulator takes uploads as Discord does for bots (multipart files[n], attachments[n] in payload_json) and
// refuses voice messages that break Discord's rules, with Discord's codes.

let discord: DiscordEmulator;
let guild: Guild;
let text: Channel;
beforeAll(async () => {
  discord = await startDiscordEmulator();
  guild = discord.createGuild({ name: 'Uploads' });
  text = guild.addTextChannel('general');
});
afterAll(() => discord.close());

const OGG = Buffer.from('OggS fake audio bytes');
const WAVEFORM = Buffer.from([0, 64, 128, 255]).toString('base64');

interface Upload {
  readonly name?: string;
  readonly field?: string;
  readonly data?: Buffer;
}

/** Posts a message as the bot: `payload` as payload_json, and each upload as a multipart part. */
async function post(payload: Record<string, unknown>, uploads: readonly Upload[] = [{}]) {
  const form = new FormData();
  form.append('payload_json', JSON.stringify(payload));
  uploads.forEach((upload, i) => {
    const bytes = upload.data ?? OGG;
    form.append(
      upload.field ?? `files[${i}]`,
      new Blob([new Uint8Array(bytes)], { type: 'application/ogg' }),
      upload.name ?? 'voice-message.ogg',
    );
  });
  const response = await fetch(`${discord.restUrl}/v10/channels/${text.id}/messages`, {
    method: 'POST',
    headers: { authorization: `Bot ${discord.token}` },
    body: form,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const voiceMessage = (extra: Record<string, unknown> = {}, attachment: Record<string, unknown> = {}) => ({
  flags: IS_VOICE_MESSAGE,
  attachments: [
    { id: '0', filename: 'voice-message.ogg', duration_secs: 1.25, waveform: WAVEFORM, ...attachment },
  ],
  ...extra,
});

describe('voice messages', () => {
  it('needs Send Voice Messages: 403 50173 without it', async () => {
    guild.setBotPermissions(DEFAULT_BOT_PERMISSIONS);
    const refused = await post(voiceMessage());
    expect(refused).toEqual({
      status: 403,
      body: { code: 50173, message: 'You cannot send voice messages in this channel' },
    });
  });

  it.each([
    ['text beside the audio', voiceMessage({ content: 'hi' }), [{}], 50159],
    ['an embed beside the audio', voiceMessage({ embeds: [{ title: 'x' }] }), [{}], 50159],
    ['two files', voiceMessage(), [{}, {}], 50160],
    ['a file that is not audio', voiceMessage({}, { filename: 'notes.txt' }), [{ name: 'notes.txt' }], 50160],
    ['no waveform', voiceMessage({}, { waveform: undefined }), [{}], 50161],
    ['no duration', voiceMessage({}, { duration_secs: undefined }), [{}], 50161],
    [
      'a waveform of 257 points',
      voiceMessage({}, { waveform: Buffer.alloc(257).toString('base64') }),
      [{}],
      50035,
    ],
    ['metadata naming no file', voiceMessage({}, { id: '1' }), [{}], 50035],
  ])('refuses %s (%s)', async (_name, payload, uploads, code) => {
    guild.setBotPermissions(DEFAULT_BOT_PERMISSIONS | P.SendVoiceMessages);
    const refused = await post(payload, uploads);
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe(code);
  });

  it('keeps a good one: its bytes, type, length and waveform, as the bot and GET see them', async () => {
    guild.setBotPermissions(DEFAULT_BOT_PERMISSIONS | P.SendVoiceMessages);
    const posted = await post(voiceMessage());
    expect(posted.status).toBe(200);
    expect(posted.body.flags).toBe(IS_VOICE_MESSAGE);
    const attachments = posted.body.attachments as Record<string, unknown>[];
    expect(attachments).toEqual([
      expect.objectContaining({
        filename: 'voice-message.ogg',
        content_type: 'audio/ogg',
        size: OGG.length,
        duration_secs: 1.25,
        waveform: WAVEFORM,
      }),
    ]);
    const [stored] = discord.channelMessages(text).slice(-1);
    expect(stored?.files[0]?.data.equals(OGG)).toBe(true);
    const fetched = await fetch(`${discord.restUrl}/v10/channels/${text.id}/messages/${posted.body.id}`, {
      headers: { authorization: `Bot ${discord.token}` },
    });
    expect(((await fetched.json()) as { attachments: unknown }).attachments).toEqual(attachments);
  });

  it('takes ordinary uploads as before', async () => {
    const posted = await post({ content: 'a file', attachments: [{ id: '0', filename: 'notes.txt' }] }, [
      { name: 'notes.txt', data: Buffer.from('hello') },
    ]);
    expect(posted.status).toBe(200);
    expect((posted.body.attachments as { content_type: string }[])[0]?.content_type).toBe('text/plain');
  });
});
