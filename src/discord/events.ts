import { type Client, Events, type Guild, type Interaction } from 'discord.js';
import type { AutoRead } from '../autoread/create.ts';
import type { Logger } from '../log.ts';
import type { Privacy } from '../privacy/index.ts';
import type { VoiceManager } from '../voice/manager.ts';
import { contained } from './contain.ts';
import { firstSightOnly } from './first-sight.ts';

/** What the gateway's events are routed to. */
export interface DiscordListeners {
  /** Answers an interaction (a slash command, a button, autocomplete, a message command). */
  readonly interaction: (interaction: Interaction) => Promise<void>;
  readonly voice: VoiceManager;
  readonly autoread: AutoRead;
  /** Told when Herald is removed from a server, and when it is in one (invited back, or at start). */
  readonly privacy: Pick<Privacy, 'serverRemoved' | 'serverPresent'>;
  readonly logger: Logger;
}

/**
 * Routes the gateway's events to the parts that act on them. Every handler is contained: an exception in one
 * server's event is logged with that server, never fatal.
 */
export function listenToDiscord(client: Client, parts: DiscordListeners): void {
  const { voice, autoread, logger } = parts;
  const { reader, autoJoin } = autoread;
  // A gateway replay can deliver an interaction twice: the second is not run (nor paid for) again. (discord.js
  // itself drops a replayed message it still has in its cache.)
  const onInteraction = firstSightOnly(
    (interaction: Interaction) => interaction.id,
    parts.interaction,
    (interaction) =>
      logger.warn('ignored an interaction Discord delivered twice', {
        id: interaction.id,
        guild: interaction.guildId,
      }),
  );
  client.on(
    Events.InteractionCreate,
    contained(logger, 'interaction', (interaction) => interaction.guildId, onInteraction),
  );
  client.on(
    Events.VoiceStateUpdate,
    contained(
      logger,
      'voice state',
      (_old, state) => state.guild.id,
      (oldState, newState) => {
        voice.onVoiceStateUpdate(oldState, newState);
        // Auto-join catches and logs its own failures; the promise never rejects.
        void autoJoin.onVoiceMove({
          guildId: newState.guild.id,
          bot: newState.member?.user.bot ?? newState.id === client.user?.id,
          oldChannelId: oldState.channelId,
          newChannelId: newState.channelId,
        });
      },
    ),
  );
  client.on(
    Events.ChannelDelete,
    contained(
      logger,
      'channel delete',
      (channel) => (channel.isDMBased() ? null : channel.guildId),
      (channel) => {
        if (!channel.isDMBased()) voice.onChannelDelete(channel.id, channel.guildId);
      },
    ),
  );
  // Herald's permissions change with its roles, a role's permissions, or a channel's overwrites.
  const onPermissions = contained(
    logger,
    'permissions change',
    (guild: Guild) => guild.id,
    (guild: Guild) => voice.onPermissionsChange(guild),
  );
  client.on(Events.GuildRoleUpdate, (_old, role) => onPermissions(role.guild));
  client.on(Events.ChannelUpdate, (_old, channel) => {
    if (!channel.isDMBased()) onPermissions(channel.guild);
  });
  client.on(Events.GuildMemberUpdate, (_old, member) => {
    if (member.id === client.user?.id) onPermissions(member.guild);
  });
  client.on(
    Events.MessageCreate,
    contained(logger, 'message', (message) => message.guildId, reader.onMessageCreate),
  );
  client.on(
    Events.MessageDelete,
    contained(
      logger,
      'message delete',
      (message) => message.guildId,
      (message) => {
        reader.onMessageDelete(message);
        // Not in voice there yet (a restart restoring its queue): remembered, so the restored queue skips it.
        if (message.guildId && !voice.get(message.guildId)) voice.withdraw(message.guildId, message.id);
      },
    ),
  );
  client.on(
    Events.MessageUpdate,
    contained(
      logger,
      'message update',
      (_old, message) => message.guildId,
      async (_old, message) => {
        // Discord sends an edit's whole message; a partial one (no content known) changes nothing to say.
        if (!message.partial) await reader.onMessageUpdate(message);
      },
    ),
  );
  client.on(
    Events.MessageBulkDelete,
    contained(
      logger,
      'bulk delete',
      (messages) => messages.first()?.guildId,
      (messages) => {
        for (const message of messages.values()) reader.onMessageDelete(message);
      },
    ),
  );
  client.on(
    Events.GuildDelete,
    contained(
      logger,
      'guild delete',
      (guild) => guild.id,
      async (guild) => {
        // discord.js emits GuildDelete only for a removal (an outage is GuildUnavailable): leave at once; the data
        // goes after DATA_RETENTION_DAYS unless Herald is invited back.
        voice.onGuildDelete(guild.id);
        await parts.privacy.serverRemoved(guild.id);
      },
    ),
  );
  client.on(
    Events.GuildCreate,
    contained(
      logger,
      'guild create',
      (guild) => guild.id,
      (guild) => parts.privacy.serverPresent(guild.id),
    ),
  );
  // Invited back while Herald was down: its servers at start are present too.
  client.once(Events.ClientReady, (ready) => {
    for (const guildId of ready.guilds.cache.keys()) {
      parts.privacy
        .serverPresent(guildId)
        .catch((error: unknown) =>
          logger.warn('could not mark a server present', { guild: guildId, err: error }),
        );
    }
  });
  client.once(Events.ClientReady, (ready) =>
    logger.info('logged in', { user: ready.user.tag, guilds: ready.guilds.cache.size }),
  );
  client.on(Events.Error, (error) => logger.error('discord client error', { err: error }));
  client.on(Events.Warn, (message) => logger.warn('discord client warning', { message }));
}
