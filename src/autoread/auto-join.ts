import type { Logger } from '../log.ts';
import type { LiveSession } from './reader.ts';
import type { AutoReadStore } from './settings.ts';

/** A member's voice state change, as the auto-joiner needs it (read off discord.js `VoiceState`s). */
export interface VoiceMove {
  readonly guildId: string;
  readonly bot: boolean;
  readonly oldChannelId: string | null;
  readonly newChannelId: string | null;
}

/** Options of {@link createVoiceAutoJoin}. */
export interface VoiceAutoJoinOptions {
  readonly store: Pick<AutoReadStore, 'settings'>;
  readonly voice: { get(guildId: string): LiveSession | undefined };
  /** Joins the voice channel; undefined when Herald cannot. */
  readonly join: (guildId: string, voiceChannelId: string) => LiveSession | undefined;
  readonly logger: Logger;
}

/**
 * With auto-join on, a member joining a voice channel that is itself read aloud (bound with `/autoread channel`)
 * brings Herald in, when Herald is not in voice in that server. It leaves, idle or alone, as after any join.
 */
export function createVoiceAutoJoin(options: VoiceAutoJoinOptions): {
  onVoiceMove(move: VoiceMove): Promise<void>;
} {
  return {
    async onVoiceMove(move) {
      const channelId = move.newChannelId;
      if (move.bot || channelId === null || channelId === move.oldChannelId) return;
      if (options.voice.get(move.guildId)) return;
      try {
        const settings = await options.store.settings(move.guildId);
        if (!settings.autoJoin || !settings.channelIds.includes(channelId)) return;
        if (options.voice.get(move.guildId)) return;
        if (options.join(move.guildId, channelId)) {
          options.logger.info('auto-joined a member’s voice channel', {
            guild: move.guildId,
            channel: channelId,
          });
        }
      } catch (error) {
        options.logger.warn('auto-join failed', { guild: move.guildId, err: error });
      }
    },
  };
}
