import {
  ApplicationIntegrationType,
  InteractionContextType,
  type RESTPostAPIApplicationCommandsJSONBody,
} from 'discord.js';
import type { Command, MessageCommand } from '../src/discord/command.ts';
import { autoread } from './autoread.ts';
import { block } from './block.ts';
import { budget } from './budget.ts';
import { dictionary } from './dictionary.ts';
import { forgetMe } from './forget-me.ts';
import { join } from './join.ts';
import { leave } from './leave.ts';
import { nickname } from './nickname.ts';
import { readAloud } from './read-aloud.ts';
import { skip } from './skip.ts';
import { speak } from './speak.ts';
import { stop } from './stop.ts';
import { unblock } from './unblock.ts';
import { voiceSet } from './voice-set.ts';
import { voiceTune } from './voice-tune.ts';
import { voices } from './voices.ts';

/** Every slash command Herald has, in the order Discord lists them. */
export const commands: readonly Command[] = [
  speak,
  voices,
  voiceSet,
  join,
  leave,
  skip,
  stop,
  autoread,
  budget,
  voiceTune,
  nickname,
  dictionary,
  block,
  unblock,
  forgetMe,
];

/** Every message command (right-click a message → Apps). */
export const messageCommands: readonly MessageCommand[] = [readAloud];

/**
 * The registration body of every command. Installed to a server by default; with `userInstall` (`USER_INSTALL=on`)
 * the commands that can work without Herald in the server (those with `executeUserInstall`) are also offered to
 * members who install Herald to their account, in servers, DMs with Herald and other DMs.
 */
export function commandBodies(options: {
  readonly userInstall: boolean;
}): RESTPostAPIApplicationCommandsJSONBody[] {
  const guildOnly = {
    integration_types: [ApplicationIntegrationType.GuildInstall],
    contexts: [InteractionContextType.Guild],
  };
  return [
    ...commands.map((command) =>
      Object.assign(
        command.data.toJSON(),
        options.userInstall && command.executeUserInstall
          ? {
              integration_types: [
                ApplicationIntegrationType.GuildInstall,
                ApplicationIntegrationType.UserInstall,
              ],
              contexts: [
                InteractionContextType.Guild,
                InteractionContextType.BotDM,
                InteractionContextType.PrivateChannel,
              ],
            }
          : guildOnly,
      ),
    ),
    ...messageCommands.map((command) => Object.assign(command.data.toJSON(), guildOnly)),
  ];
}
