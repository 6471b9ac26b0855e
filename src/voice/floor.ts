import type { VoiceBasedChannel } from 'discord.js';

/**
 * Why Herald will not take the floor in `channel`, or undefined when it may. Today: a server's AFK channel, where
 * Discord lets nobody speak — joining it would only hold a queue that can never play.
 */
export type FloorRefusal = { readonly kind: 'afk-channel' };

/** "May Herald be heard here?" — checked before any join (a /speak, /join or an auto-join), so nothing is paid. */
export function floorRefusal(channel: VoiceBasedChannel): FloorRefusal | undefined {
  if (channel.guild.afkChannelId === channel.id) return { kind: 'afk-channel' };
  return undefined;
}
