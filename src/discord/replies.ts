import { randomBytes } from 'node:crypto';
import {
  type CommandInteraction,
  DiscordAPIError,
  type InteractionReplyOptions,
  type MessageComponentInteraction,
  MessageFlags,
  RESTJSONErrorCodes,
  type RepliableInteraction,
} from 'discord.js';
import { AudioFormatError } from '../audio/errors.ts';
import { formatUsd } from '../budget/index.ts';
import type { Logger } from '../log.ts';
import { DatabaseTimeoutError, isDatabaseUnavailable } from '../storage/index.ts';
import { TtsError, type TtsInsufficientBalanceError, type TtsRateLimitedError } from '../tts/index.ts';
import { UserFacingError } from './member-facing.ts';

/** Replies never ping anyone. */
export const NO_MENTIONS = { parse: [] } as const;

/**
 * The sentence a member sees for a failure. TTS errors become plain explanations; anything unexpected is logged
 * once, with an id the member is shown so the operator can find it.
 */
export function describeFailure(error: unknown, logger: Logger): string {
  if (error instanceof UserFacingError) return error.message;
  if (error instanceof TtsError) {
    switch (error.code) {
      case 'TTS_INVALID_REQUEST':
        return `The speech service refused this text: ${error.message}`;
      case 'TTS_AUTHENTICATION':
        logger.error('the TTS service refused the API key', { err: error });
        return 'The speech service refused Herald’s API key. The bot’s operator needs to check it.';
      case 'TTS_INSUFFICIENT_BALANCE': {
        const balance = (error as TtsInsufficientBalanceError).balanceUsd;
        return `The speech service account is out of credit${balance === undefined ? '' : ` (balance ${formatUsd(balance)})`}. The bot’s operator needs to top it up.`;
      }
      case 'TTS_UNKNOWN_SPEAKER':
        return 'The speech service no longer offers that voice. Pick another with /voices.';
      case 'TTS_RATE_LIMITED': {
        const retry = (error as TtsRateLimitedError).retryAfterMs;
        return `The speech service is busy${retry === undefined ? '' : `; try again in ${Math.ceil(retry / 1000)} s`}.`;
      }
      case 'TTS_TIMEOUT':
        return 'The speech service took too long to answer, so I skipped this message.';
      case 'TTS_CONNECTION':
        return 'I could not reach the speech service. Try again in a moment.';
      case 'TTS_SERVICE':
        return 'The speech service had an internal error. Try again in a moment.';
      case 'TTS_PROTOCOL':
        logger.error('the TTS service answered outside its contract', { err: error });
        return 'The speech service sent something I could not play.';
      case 'TTS_ABORTED':
        return 'That message was cancelled.';
    }
  }
  // Audio Herald cannot play is the service's doing (a stream cut short, a broken file), not a fault of Herald's.
  if (error instanceof AudioFormatError) {
    logger.warn('the TTS service sent audio Herald cannot play', { err: error });
    return error.code === 'ERR_TRUNCATED'
      ? 'The speech service’s audio stopped short, so the rest of this message could not be played.'
      : 'The speech service sent audio I could not play.';
  }
  // A database host gone silent, down or restarting: nothing the member can fix, but nothing to hide behind an
  // error id either.
  if (isDatabaseUnavailable(error)) {
    logger.error(
      error instanceof DatabaseTimeoutError
        ? 'the database did not answer in time'
        : 'the database is unavailable',
      { err: error },
    );
    return 'Herald’s database is not answering right now, so this did not go through. Try again in a moment.';
  }
  const id = randomBytes(4).toString('hex');
  logger.error('unexpected error', { errorId: id, err: error });
  return `Something went wrong on my side (error id ${id}). The bot’s operator can look it up in the logs.`;
}

/**
 * Discord no longer knows the interaction: it was not answered within its three seconds (a process too busy to
 * get to it in time), so nothing (an answer, a deferral, an error message) can reach the member through it.
 */
export function isExpiredInteraction(error: unknown): boolean {
  return error instanceof DiscordAPIError && error.code === RESTJSONErrorCodes.UnknownInteraction;
}

/** Sends an ephemeral answer whatever state the interaction is in: reply, edit of a deferral, or follow-up. */
export async function respondEphemeral(
  interaction: RepliableInteraction | MessageComponentInteraction,
  content: string,
  extra: Omit<InteractionReplyOptions, 'content' | 'flags'> = {},
): Promise<void> {
  const options = { ...extra, content, allowedMentions: NO_MENTIONS };
  if (interaction.deferred && !interaction.replied) {
    await interaction.editReply(options);
  } else if (interaction.replied) {
    await interaction.followUp({ ...options, flags: MessageFlags.Ephemeral });
  } else {
    await interaction.reply({ ...options, flags: MessageFlags.Ephemeral });
  }
}

/**
 * How long after its creation an interaction is deferred ("thinking…") if its command has not answered. Discord
 * forgets an interaction not answered within three seconds of creating it; half of that leaves the rest for the
 * REST call.
 */
export const DEFER_AFTER_MS = 1_500;

/**
 * Answers an interaction once, ephemerally, for commands that may wait on the network before they know their
 * answer. An answer ready within {@link DEFER_AFTER_MS} (nearly always) is the interaction's one reply; otherwise
 * the interaction is deferred at that moment and the answer edits the deferral in. One call rather than two: 200
 * members asking at once waited 4 s for "Speaking now" behind deferrals that were never needed, when
 * @discordjs/rest still held every webhook edit to the bot's global 50 requests a second (patched since: see
 * patches/README.md).
 */
export function acknowledgeEphemeral(
  interaction: RepliableInteraction,
  logger: Logger,
  deferAfterMs = DEFER_AFTER_MS,
): (content: string, extra?: Omit<InteractionReplyOptions, 'content' | 'flags'>) => Promise<void> {
  let deferral: Promise<void> | undefined;
  let answering = false;
  // Discord's three seconds run from the interaction's creation: one that waited in a busy process's socket has
  // less left. Never later than `deferAfterMs` from now, whatever the clocks say.
  const age = Date.now() - interaction.createdTimestamp;
  const deferIn = Number.isFinite(age)
    ? Math.min(deferAfterMs, Math.max(0, deferAfterMs - age))
    : deferAfterMs;
  const timer = setTimeout(() => {
    // A command that threw before answering has been answered by the interaction handler instead.
    if (answering || interaction.deferred || interaction.replied) return;
    deferral = interaction.deferReply({ flags: MessageFlags.Ephemeral }).then(
      () => {},
      (error: unknown) => {
        // Expired: the answer that follows meets the same refusal, and the interaction handler reports it once.
        if (!isExpiredInteraction(error)) logger.warn('could not acknowledge an interaction', { err: error });
      },
    );
  }, deferIn);
  return async (content, extra) => {
    answering = true;
    clearTimeout(timer);
    await deferral;
    await respondEphemeral(interaction, content, extra);
  };
}

/**
 * An interaction's token lets Herald follow up for 15 minutes; a follow-up after that is refused (Discord: 50027
 * Invalid Webhook Token, or 10015 Unknown Webhook once forgotten).
 */
export const INTERACTION_TOKEN_LIFETIME_MS = 15 * 60_000;

/** True when `error` is Discord refusing an interaction token that expired. */
export function isExpiredToken(error: unknown): boolean {
  return (
    error instanceof DiscordAPIError &&
    (error.code === RESTJSONErrorCodes.InvalidWebhookToken ||
      error.code === RESTJSONErrorCodes.UnknownWebhook)
  );
}

/**
 * Tells the member who asked something that happened later (a queued utterance failed), through the interaction
 * while its token lives (ephemeral), and after that in the channel where they asked, naming them without a ping:
 * a `/speak` that waited 16 minutes in a long queue still hears why. When Herald may not post there either, the
 * sentence is logged: never an unhandled rejection.
 */
export async function followUpLater(
  interaction: RepliableInteraction | CommandInteraction,
  content: string,
  logger: Logger,
  now: () => number = Date.now,
): Promise<void> {
  const alive = now() - interaction.createdTimestamp < INTERACTION_TOKEN_LIFETIME_MS - 10_000;
  if (alive) {
    try {
      await interaction.followUp({ content, flags: MessageFlags.Ephemeral, allowedMentions: NO_MENTIONS });
      return;
    } catch (error) {
      if (!isExpiredToken(error)) throw error;
    }
  }
  const channel = interaction.channel;
  const name =
    interaction.member && 'displayName' in interaction.member ? interaction.member.displayName : undefined;
  try {
    if (!channel?.isSendable()) throw new Error('the channel is not one Herald can post in');
    await channel.send({
      content: `${name ?? interaction.user.username}: ${content}`,
      allowedMentions: NO_MENTIONS,
    });
  } catch (error) {
    // Ids only: the sentence quotes what the member asked to say, and logs carry no member text (docs/privacy.md).
    logger.warn('could not tell a member what happened after their interaction expired', {
      err: error,
      user: interaction.user.id,
      channel: interaction.channelId,
    });
  }
}
