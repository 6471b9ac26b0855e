import {
  ApplicationIntegrationType,
  type ChatInputCommandInteraction,
  type Interaction,
  type MessageContextMenuCommandInteraction,
  MessageFlags,
} from 'discord.js';
import type { Command, Deps, MessageCommand } from './command.ts';
import { describeFailure, isExpiredInteraction, NO_MENTIONS, respondEphemeral } from './replies.ts';

/**
 * Routes interactions to commands (slash commands, then `messageCommands`: right-click a message → Apps). The one
 * place that turns a thrown error into an ephemeral reply; nothing a handler throws escapes to discord.js.
 */
export function createInteractionHandler(
  commands: readonly Command[],
  deps: Deps,
  messageCommands: readonly MessageCommand[] = [],
): (interaction: Interaction) => Promise<void> {
  const byName = new Map(commands.map((command) => [command.data.name, command]));
  const messageByName = new Map(messageCommands.map((command) => [command.data.name, command]));
  /** True for a command Herald has; a command since removed gets a sentence (Discord forgets it within an hour). */
  const known = async (
    interaction: ChatInputCommandInteraction<'cached'> | MessageContextMenuCommandInteraction<'cached'>,
    command: Command | MessageCommand | undefined,
  ): Promise<boolean> => {
    if (!command) {
      await respondEphemeral(interaction, 'I do not know that command any more; it will disappear shortly.');
      return false;
    }
    deps.logger.debug('command', {
      command: interaction.commandName,
      guild: interaction.guildId,
      // How long it waited before Herald got to it, of Discord's three seconds to answer.
      ageMs: Date.now() - interaction.createdTimestamp,
    });
    return true;
  };

  return async (interaction) => {
    try {
      if (interaction.isAutocomplete()) {
        const command = byName.get(interaction.commandName);
        // Outside Herald's servers, only the commands made for user installs answer (when the operator allows).
        const answers =
          interaction.inCachedGuild() ||
          (deps.userInstall.enabled &&
            userInstalled(interaction) &&
            command?.executeUserInstall !== undefined);
        if (!answers) return await interaction.respond([]);
        await command?.autocomplete?.(interaction, deps);
        return;
      }
      if (!interaction.isRepliable()) return;
      if (!interaction.inCachedGuild()) {
        // Herald installed to the member's account only (a DM, a server Herald is not in): the commands made for it.
        const command = interaction.isChatInputCommand() ? byName.get(interaction.commandName) : undefined;
        if (interaction.isChatInputCommand() && userInstalled(interaction) && command?.executeUserInstall) {
          if (deps.userInstall.enabled) return await command.executeUserInstall(interaction, deps);
          return await respondEphemeral(
            interaction,
            'Herald’s operator has not enabled it as an app installed to your account; use it in a server it was added to.',
          );
        }
        await interaction.reply({
          content: 'Herald works in servers, not in direct messages.',
          flags: MessageFlags.Ephemeral,
          allowedMentions: NO_MENTIONS,
        });
        return;
      }
      if (interaction.isChatInputCommand()) {
        const command = byName.get(interaction.commandName);
        if (await known(interaction, command)) await command?.execute(interaction, deps);
      } else if (interaction.isMessageContextMenuCommand()) {
        const command = messageByName.get(interaction.commandName);
        if (await known(interaction, command)) await command?.execute(interaction, deps);
      } else if (interaction.isButton()) {
        const [name = ''] = interaction.customId.split(':');
        await (byName.get(name) ?? messageByName.get(name))?.button?.(interaction, deps);
      }
    } catch (error) {
      if (isExpiredInteraction(error)) {
        // Not a fault to investigate and nothing to tell the member through it: what the command set going (an
        // utterance queued) goes on. One line, without a stack: a process this late has many of them.
        deps.logger.warn('an interaction expired before Herald could answer it', {
          ...(interaction.isCommand() ? { command: interaction.commandName } : {}),
          guild: interaction.guildId,
          ageMs: Date.now() - interaction.createdTimestamp,
        });
        return;
      }
      if (!interaction.isRepliable()) {
        deps.logger.error('interaction failed', { err: error });
        return;
      }
      const message = describeFailure(error, deps.logger);
      await respondEphemeral(interaction, message).catch((replyError: unknown) =>
        deps.logger.warn('could not report an error to the member', { err: replyError }),
      );
    }
  };
}

/** Whether Herald is installed to the member's account for this interaction (it may be installed to the server too). */
function userInstalled(interaction: Interaction): boolean {
  return interaction.authorizingIntegrationOwners[ApplicationIntegrationType.UserInstall] !== undefined;
}
