import { ApplicationIntegrationType, type Interaction, MessageFlags } from 'discord.js';
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

  return async (interaction) => {
    try {
      if (interaction.isAutocomplete()) {
        if (!interaction.inCachedGuild()) return await interaction.respond([]);
        await byName.get(interaction.commandName)?.autocomplete?.(interaction, deps);
        return;
      }
      if (!interaction.isRepliable()) return;
      if (!interaction.inCachedGuild()) {
        // Herald installed to the member's account only (a DM, a server Herald is not in): the commands made for it.
        const userInstalled =
          interaction.authorizingIntegrationOwners[ApplicationIntegrationType.UserInstall] !== undefined;
        const command = interaction.isChatInputCommand() ? byName.get(interaction.commandName) : undefined;
        if (interaction.isChatInputCommand() && userInstalled && command?.executeUserInstall) {
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
        if (!command) {
          await respondEphemeral(
            interaction,
            'I do not know that command any more; it will disappear shortly.',
          );
          return;
        }
        deps.logger.debug('command', {
          command: interaction.commandName,
          guild: interaction.guildId,
          // How long it waited before Herald got to it, of Discord's three seconds to answer.
          ageMs: Date.now() - interaction.createdTimestamp,
        });
        await command.execute(interaction, deps);
      } else if (interaction.isMessageContextMenuCommand()) {
        const command = messageByName.get(interaction.commandName);
        if (!command) {
          await respondEphemeral(
            interaction,
            'I do not know that command any more; it will disappear shortly.',
          );
          return;
        }
        deps.logger.debug('command', {
          command: interaction.commandName,
          guild: interaction.guildId,
          ageMs: Date.now() - interaction.createdTimestamp,
        });
        await command.execute(interaction, deps);
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
