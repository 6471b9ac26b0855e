/**
 * The patch in patches/@discordjs+voice+0.19.2+004+prefer-native-xchacha.patch (see patches/README.md): with
 * sodium-native installed, a voice connection chooses aead_xchacha20_poly1305_rtpsize although Discord lists
 * aead_aes256_gcm_rtpsize first, and the voice server decrypts every frame; offered AES only, it takes AES as before.
 * A real @discordjs/voice connection (the emulator's test bot) against the Discord emulator, DAVE on as on Discord.
 */
import { PermissionFlagsBits } from 'discord.js';
import { afterEach, describe, expect, it } from 'vitest';
import { type DiscordEmulator, startDiscordEmulator } from '../../emulators/discord/index.ts';
import { startTestBot, type TestBot } from '../../emulators/discord/test-bot.ts';
import { readOggOpus } from '../../emulators/support/ogg.ts';
import { startTtsEmulator, type TtsEmulator } from '../../emulators/tts/index.ts';

let discord: DiscordEmulator | undefined;
let tts: TtsEmulator | undefined;
let bot: TestBot | undefined;
afterEach(async () => {
  await bot?.close();
  await discord?.close();
  await tts?.close();
  [bot, discord, tts] = [undefined, undefined, undefined];
});

describe('@discordjs/voice transport encryption mode (patched, sodium-native installed)', () => {
  it.each([
    {
      offered: 'AES-256-GCM and XChaCha20-Poly1305',
      xchacha: true,
      chosen: 'aead_xchacha20_poly1305_rtpsize',
    },
    { offered: 'AES-256-GCM only', xchacha: false, chosen: 'aead_aes256_gcm_rtpsize' },
  ])('offered $offered, chooses $chosen and every frame is heard', async ({ xchacha, chosen }) => {
    discord = await startDiscordEmulator({ xchacha });
    tts = await startTtsEmulator({ speed: 4 });
    const guild = discord.createGuild({ name: 'Test Server' });
    guild.addTextChannel('general');
    const lounge = guild.addVoiceChannel('Lounge');
    const member = guild.addMember({ name: 'bob', permissions: PermissionFlagsBits.UseApplicationCommands });
    guild.joinVoice(member, lounge);
    bot = await startTestBot({
      restUrl: discord.restUrl,
      token: discord.token,
      tts: { baseUrl: tts.baseUrl, apiKey: tts.apiKey, speakerId: tts.speakers[0]?.id ?? '' },
    });
    await discord.untilReady();

    await discord.slash(member, 'speak', { text: 'transport encryption' });
    const heard = await discord.voice(guild).untilSilent();

    const sent = readOggOpus(bot.played[0] ?? Buffer.alloc(0)).packets;
    expect(sent.length).toBeGreaterThan(0);
    expect(heard.frames).toEqual(sent);
    expect(new Set(discord.voice(guild).frames.map((frame) => frame.mode))).toEqual(new Set([chosen]));
    expect(discord.rejectedVoicePackets).toBe(0);
    expect(bot.errors).toEqual([]);
  });
});
