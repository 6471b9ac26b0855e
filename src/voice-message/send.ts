import {
  AttachmentBuilder,
  DiscordAPIError,
  MessageFlags,
  PermissionFlagsBits,
  RESTJSONErrorCodes,
  type RepliableInteraction,
} from 'discord.js';
import { formatUsd } from '../budget/index.ts';
import { formatCount } from '../discord/member-facing.ts';
import { describeFailure, NO_MENTIONS } from '../discord/replies.ts';
import type { Logger } from '../log.ts';
import type { ApiForm } from '../tts/index.ts';
import type { SpeechRequest } from '../voice/session.ts';
import { NOT_OPUS, type VoiceClip, type VoiceMessages } from './render.ts';

/** What {@link sendVoiceMessage} needs of Herald's dependencies (a `Deps` fits). */
export interface VoiceMessageDeps {
  readonly voiceMessages: VoiceMessages;
  readonly ttsForm: ApiForm;
  readonly logger: Logger;
}

/** One voice message to make and post where an interaction was used. */
export interface VoiceMessageJob {
  readonly request: SpeechRequest;
  /** Whose budget (server) pays, and whose cache choice applies. */
  readonly ledgerId: string;
  /** Code points sent to the service, for the summary. */
  readonly characters: number;
  /**
   * The interaction's one ephemeral answer (an `acknowledgeEphemeral` reply): a refusal, or the note that the
   * message is being made, which the outcome then edits.
   */
  readonly acknowledge: (content: string) => Promise<void>;
  /** Checked after the permission, before anything is paid: a sentence refuses (a per-member daily limit). */
  readonly admit?: () => Promise<string | undefined>;
}

/** The sentence for a channel where Herald may not post voice messages. */
export const MISSING_VOICE_MESSAGE_PERMISSION =
  'I can’t send voice messages here: I am missing the Send Voice Messages permission in this channel.';

/** A voice message's body: only the clip, with its length and waveform, and the voice-message flag. */
export function voiceMessageBody(clip: VoiceClip): {
  files: AttachmentBuilder[];
  flags: MessageFlags.IsVoiceMessage;
} {
  const file = new AttachmentBuilder(clip.audio, {
    name: clip.name,
    duration: clip.durationSecs,
    waveform: clip.waveform,
  });
  return { files: [file], flags: MessageFlags.IsVoiceMessage };
}

/**
 * Makes `job`'s speech and posts it as a voice message in the interaction's channel (a follow-up, so it works
 * wherever the interaction came from: a server's channel, a DM, a server Herald is not in). The permission and
 * `admit` are checked before anything is paid; the budget guard refuses inside the synthesis, with the same
 * sentences as `/speak`, and a cached sentence is posted without paying. The ephemeral answer says how it went.
 */
export async function sendVoiceMessage(
  interaction: RepliableInteraction,
  deps: VoiceMessageDeps,
  job: VoiceMessageJob,
): Promise<void> {
  // Herald posts the service's bytes as they are; WAV would need re-encoding, so it is refused before paying.
  if (deps.ttsForm !== 'current') return job.acknowledge(NOT_OPUS);
  // Discord refuses the post without it (50173), but only after the speech was paid for: ask first.
  if (!interaction.appPermissions?.has(PermissionFlagsBits.SendVoiceMessages)) {
    return job.acknowledge(MISSING_VOICE_MESSAGE_PERMISSION);
  }
  const refusal = await job.admit?.();
  if (refusal !== undefined) return job.acknowledge(refusal);
  await job.acknowledge(`Recording a voice message as ${job.request.speaker.name}…`);
  const edit = (content: string) => interaction.editReply({ content, allowedMentions: NO_MENTIONS });

  let clip: VoiceClip;
  try {
    clip = await deps.voiceMessages.render(job.request, job.ledgerId);
  } catch (error) {
    // A budget refusal is a UserFacingError: its sentence is /speak's, as it is.
    await edit(describeFailure(error, deps.logger));
    return;
  }
  try {
    await interaction.followUp(voiceMessageBody(clip));
  } catch (error) {
    deps.voiceMessages.undelivered(clip, 'voice message refused by Discord');
    await edit(describePostFailure(error, deps.logger));
    return;
  }
  // A cache hit made no HTTP attempt and cost nothing.
  const paid = clip.result.attempts > 0;
  const parts = [
    `Sent a voice message as ${job.request.speaker.name}`,
    `${formatCount(job.characters)} characters`,
    `${clip.durationSecs.toFixed(1)} s`,
    paid
      ? clip.result.costUsd === undefined
        ? undefined
        : formatUsd(clip.result.costUsd)
      : 'from the cache, free',
  ];
  await edit(`${parts.filter((part) => part !== undefined).join(' · ')}.`);
}

function describePostFailure(error: unknown, logger: Logger): string {
  if (
    error instanceof DiscordAPIError &&
    error.code === RESTJSONErrorCodes.YouCannotSendVoiceMessagesInThisChannel
  ) {
    return MISSING_VOICE_MESSAGE_PERMISSION;
  }
  return `Discord did not take the voice message: ${describeFailure(error, logger)}`;
}
