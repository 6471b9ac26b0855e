import type { Client } from 'discord.js';
import { describeFailure, NO_MENTIONS } from '../discord/replies.ts';
import type { Logger } from '../log.ts';
import type { MemberStore } from '../members/index.ts';
import type { SettingsStore } from '../storage/index.ts';
import type { TtsClient } from '../tts/index.ts';
import type { VoiceManager } from '../voice/manager.ts';
import { createVoiceAutoJoin } from './auto-join.ts';
import { type AutoReader, createAutoReader, type LiveSession } from './reader.ts';
import type { AutoReadStore } from './settings.ts';

/** Auto-read as the gateway's events drive it: the reader of new messages and the auto-joiner. */
export interface AutoRead {
  readonly reader: AutoReader;
  readonly autoJoin: ReturnType<typeof createVoiceAutoJoin>;
}

/** What {@link createAutoRead} is built from. */
export interface AutoReadParts {
  readonly client: Client;
  /** Where auto-read joins. */
  readonly voice: VoiceManager;
  /** The same sessions as `voice`, as auto-read speaks on them (the metrics mark its utterances). */
  readonly speakOn: { get(guildId: string): LiveSession | undefined };
  readonly store: AutoReadStore;
  readonly settings: SettingsStore;
  readonly tts: TtsClient;
  readonly members: MemberStore;
  /** `TTS_DEFAULT_SPEAKER`. */
  readonly defaultSpeaker: string | undefined;
  readonly logger: Logger;
}

/**
 * Builds auto-read: it joins voice channels by id through `voice`, and says in the channel it reads when a message
 * could not be spoken.
 */
export function createAutoRead(parts: AutoReadParts): AutoRead {
  const { client, voice, logger } = parts;
  /** Joins a voice channel by id; the session, or undefined when Herald cannot join it. */
  const joinById = (guildId: string, voiceChannelId: string, announceId: string): LiveSession | undefined => {
    const guild = client.guilds.cache.get(guildId);
    const channel = guild?.channels.cache.get(voiceChannelId);
    if (!channel?.isVoiceBased()) return undefined;
    const announce = guild?.channels.cache.get(announceId);
    const outcome = voice.join(channel, announce?.isSendable() ? announce : undefined);
    return outcome.kind === 'joined' || outcome.kind === 'already-here' ? outcome.session : undefined;
  };
  const autoJoin = createVoiceAutoJoin({
    store: parts.store,
    voice,
    join: (guildId, channelId) => joinById(guildId, channelId, channelId),
    logger,
  });
  const reader = createAutoReader({
    store: parts.store,
    voice: parts.speakOn,
    settings: parts.settings,
    tts: parts.tts,
    defaultSpeaker: parts.defaultSpeaker,
    logger,
    join: joinById,
    members: parts.members,
    notify: (channelId, error) => {
      const channel = client.channels.cache.get(channelId);
      if (!channel?.isSendable()) return;
      const content = `Auto-read could not speak a message: ${describeFailure(error, logger)}`;
      channel.send({ content, allowedMentions: NO_MENTIONS }).catch((sendError: unknown) => {
        logger.warn('could not post an auto-read notice', { err: sendError });
      });
    },
  });
  return { reader, autoJoin };
}
