/**
 * A moderator's hand on Herald in the sandbox: a server mute, and on the stage an invitation to speak. The page
 * shows Herald's voice state as Discord's client does (muted, in the stage's audience, hand raised) and offers the
 * admin what a moderator may do about it; Herald itself only sees the voice state Discord sends it.
 */
import type { Guild, Member } from '../emulators/discord/index.ts';
import { type Action, BadRequest } from './http.ts';

/** Herald's voice state as the page draws it. */
export interface HeraldVoiceView {
  /** A moderator server-muted Herald: nobody hears it wherever it sits. */
  readonly muted: boolean;
  /** Herald sits in a stage's audience (`suppress`): nobody hears it until a moderator invites it to speak. */
  readonly suppressed: boolean;
  /** Herald raised its hand on the stage (asked to speak). */
  readonly requestedToSpeak: boolean;
}

/** The moderation the page offers: Herald's voice state, and the `moderate` action (the admin only). */
export function createModeration(
  guild: Guild,
  moderators: readonly Member[],
  onChange: () => void,
): { view(): HeraldVoiceView; moderate: Action } {
  return {
    view: () => guild.voiceFlags(guild.bot),
    moderate: (body) => {
      if (!moderators.some((m) => m.id === body.as)) {
        throw new BadRequest('Only a moderator can do that: choose Ada Admin at the top.');
      }
      switch (body.act) {
        case 'mute':
        case 'unmute':
          if (guild.botVoiceChannelId() === null) {
            throw new BadRequest(
              'Discord server-mutes only a member in a voice channel: Herald is not in one.',
            );
          }
          guild.serverMute(guild.bot, body.act === 'mute');
          break;
        case 'invite':
          if (!guild.voiceFlags(guild.bot).suppressed) {
            throw new BadRequest('Herald is not in a stage’s audience.');
          }
          guild.inviteToSpeak(guild.bot);
          break;
        default:
          throw new BadRequest('unknown moderation');
      }
      onChange();
      return {};
    },
  };
}
