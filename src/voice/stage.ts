import { ChannelType, PermissionFlagsBits, type VoiceState } from 'discord.js';
import type { Logger } from '../log.ts';

/** What Herald says when it waits on a stage for a moderator's invitation. */
export const STAGE_REQUEST_MESSAGE =
  'I asked to speak on the stage; a stage moderator must invite me, and I will speak then. Nothing is spent until then.';

/** What Herald says when Discord refused both ways onto the stage. */
const STAGE_FAILED_MESSAGE =
  'I am in the stage audience and could not ask to speak, so nobody can hear me. A stage moderator can invite me; I keep the queue until then.';

/** True when `state` is a voice state in a stage channel. */
export function onStage(state: VoiceState): boolean {
  return state.channel?.type === ChannelType.GuildStageVoice;
}

/**
 * Herald just sat down on a stage (in the audience, suppressed): with Mute Members there it takes the stage itself;
 * otherwise it asks to speak and `say`s that a stage moderator must invite it. Until its voice state is no longer
 * suppressed the session's gate keeps the queue waiting (see VoiceManager).
 */
export async function takeStage(me: VoiceState, say: (text: string) => void, logger: Logger): Promise<void> {
  const self = me.guild.members.me;
  const moderator =
    self !== null && me.channel?.permissionsFor(self).has(PermissionFlagsBits.MuteMembers) === true;
  try {
    if (moderator) await me.setSuppressed(false);
    else {
      await me.setRequestToSpeak(true);
      say(STAGE_REQUEST_MESSAGE);
    }
  } catch (error) {
    logger.warn('could not take the stage', { guild: me.guild.id, err: error });
    say(STAGE_FAILED_MESSAGE);
  }
}
